// `npm run faults [-- --minutes N --seed S --replay I --only kind,kind --fix-off sync --settle 30 --nats newest|default --claude --keep]`:
// runs fault schedules on a lab of network namespaces for a budget and prints the report, whose
// last line is one JSON object {seed, schedules, faults, checked, violations}. Needs root.
import { randomInt } from "node:crypto";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { newestNatsServer, testNatsServer } from "../nats-server.js";
import { FAULT_KINDS } from "./faults.js";
import { labUnavailable } from "./hosts.js";
import { FaultRunRefusedError, FIXES, runFaults, type Fix } from "./run.js";

const Flags = z
  .object({
    minutes: z.coerce
      .number()
      .positive()
      .max(24 * 60)
      .default(10),
    seed: z.coerce.number().int().min(0).max(0xffffffff).optional(),
    replay: z.coerce.number().int().min(0).optional(),
    schedules: z.coerce.number().int().positive().optional(),
    only: z
      .string()
      .transform((s) => s.split(",").map((k) => k.trim()))
      .pipe(z.array(z.enum(FAULT_KINDS)).min(1))
      .optional(),
    "fix-off": z.enum(Object.keys(FIXES) as [Fix, ...Fix[]]).optional(),
    keep: z.boolean().default(false),
    // A real Claude Code seat beside the echo seats (docs/reliability.md, "The Claude seat").
    claude: z.boolean().default(false),
    // The nodes' server: the newest supported (every fault kind keeps the promise on it), or the one `cotal up` installs (2.10: no full disk).
    nats: z.enum(["newest", "default"]).optional(),
    // How long acknowledged messages may take to arrive after the faults heal (a late arrival is no violation).
    settle: z.coerce.number().int().min(1).max(3_600).default(30),
  })
  .strict();

function parseArgs(argv: readonly string[]): z.infer<typeof Flags> {
  const raw: Record<string, unknown> = {};
  for (let i = 0; i < argv.length; i += 1) {
    const a = argv[i]!;
    if (!a.startsWith("--"))
      throw new Error(
        `unexpected argument ${JSON.stringify(a)}: flags are --minutes N, --seed S, --replay I, --schedules N, --only KINDS, --fix-off FIX (${Object.keys(FIXES).join(", ")}), --settle SECONDS, --nats newest|default, --claude, --keep`,
      );
    const name = a.slice(2);
    if (name === "keep" || name === "claude") raw[name] = true;
    else raw[name] = argv[++i];
  }
  const r = Flags.safeParse(raw);
  if (!r.success)
    throw new Error(`bad flags: ${r.error.issues.map((i) => `--${i.path.join(".")}: ${i.message}`).join("; ")} (fault kinds: ${FAULT_KINDS.join(", ")})`);
  return r.data;
}

async function main(): Promise<number> {
  let flags: z.infer<typeof Flags>;
  try {
    flags = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  const why = labUnavailable();
  if (why) {
    process.stderr.write(`faults: ${why}\n`);
    return 2;
  }
  const seed = flags.seed ?? randomInt(0, 0xffffffff);
  let stop = false;
  process.on("SIGINT", () => {
    if (stop) process.exit(130); // the next run removes the lab it leaves (sweepStaleLabs)
    stop = true;
    process.stderr.write("faults: stopping after this schedule, then cleaning up (Ctrl-C again: stop now; the next run removes what is left)\n");
  });
  const say = (line: string) => process.stderr.write(`${line}\n`);
  say(`faults: seed ${seed}${flags.replay !== undefined ? `, replaying schedule ${flags.replay}` : `, budget ${flags.minutes} min`}`);
  let result: Awaited<ReturnType<typeof runFaults>>;
  try {
    result = await runFaults({
      seed,
      minutes: flags.minutes,
      ...(flags.schedules !== undefined ? { schedules: flags.schedules } : {}),
      ...(flags.replay !== undefined ? { replay: flags.replay } : {}),
      ...(flags.only ? { only: flags.only } : {}),
      ...(flags["fix-off"] ? { fixOff: flags["fix-off"] } : {}),
      natsServer:
        (flags.nats ?? (flags["fix-off"] === "write-errors" ? "default" : "newest")) === "newest" ? newestNatsServer(process.env, say) : testNatsServer(),
      cotal: fileURLToPath(new URL("./cotal.mjs", import.meta.url)),
      keepDir: flags.keep,
      modelSeat: flags.claude,
      round: { settleMs: flags.settle * 1_000 },
      say,
      interrupted: () => stop,
    });
  } catch (err) {
    if (!(err instanceof FaultRunRefusedError)) throw err;
    process.stderr.write(`faults: ${err.message}\n`);
    return 2;
  }
  process.stdout.write(`${result.report}\n`);
  return result.summary.violations === 0 ? 0 : 1;
}

process.exitCode = await main();
