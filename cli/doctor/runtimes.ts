// `cotal doctor`: each agent CLI of the runtime registry (docs/runtimes.md): found as a manager
// started here would find it, its version, and whether its credentials are here.
import { execFile } from "node:child_process";
import { delimiter, join } from "node:path";
import { findRuntimeCli } from "../../manager/index.js";
import { RUNTIMES } from "../../runtimes/index.js";
import type { RuntimeAdapter } from "../../runtime/index.js";
import { authChoices } from "../mesh-host/runtime-auth.js";
import { oneLine } from "../terminal/output.js";
import { packageRoot } from "../install/package-root.js";
import { failed, failedWith, pass, warned, type DoctorCheck } from "./check.js";
import type { NeededRuntimes } from "./needed-runtimes.js";

/** How long a CLI may take to print its version (OpenCode's cold start took 14 s on a loaded 2-core host). */
const VERSION_TIMEOUT_MS = 30_000;

/**
 * One check per registered runtime (their CLIs asked at once: a cold start can take seconds each).
 * A runtime `needed` names (neededRuntimes) fails when it cannot run here; any other only warns.
 */
export function runtimeChecks(needed: NeededRuntimes, env: NodeJS.ProcessEnv = process.env): Promise<DoctorCheck[]> {
  // A manager looks on PATH and in the package's own node_modules/.bin (cli/commands/manager.ts).
  const search = { ...env, PATH: [env.PATH ?? "", join(packageRoot(), "node_modules", ".bin")].join(delimiter) };
  return Promise.all(
    RUNTIMES.map(async (adapter) => {
      const by = needed.get(adapter.name);
      const c = await runtimeCheck(adapter, env, search, !!by);
      if (by) return { ...c, detail: `${sentence(c.detail)} Needed here: ${by.join(", ")}.` };
      // Nobody named it: what keeps it from running is worth knowing, not a failure of this host.
      return c.verdict === "fail"
        ? { ...c, verdict: "warn" as const, detail: `${sentence(c.detail)} Not needed here: no agent file, cotal.yaml seat or --runtime names it.` }
        : c;
    }),
  );
}

function sentence(s: string): string {
  return /[.!?)]$/.test(s) ? s : `${s}.`;
}

async function runtimeCheck(adapter: RuntimeAdapter, env: NodeJS.ProcessEnv, search: NodeJS.ProcessEnv, needed: boolean): Promise<DoctorCheck> {
  const id = `runtime:${adapter.name}`;
  const title = adapter.name;
  const found = findRuntimeCli(adapter, search);
  const notes = found.notes.length ? ` (${found.notes.join(" ")})` : "";
  if (!found.path)
    return (needed ? failed : warned)(
      id,
      title,
      `${adapter.label} (${adapter.command}) is not installed here: not on PATH, and ${adapter.binEnv} is not set${notes}; seats and runs on this runtime are refused on this host.`,
      `${needed ? "" : "To use it: "}${adapter.installHint}`,
    );
  const version = await cliVersion(found.path);
  if (!version.ok)
    return failed(id, title, `${found.path} did not run: \`${adapter.command} --version\` ${version.why}.`, `Reinstall it. ${adapter.installHint}`);
  let auth;
  try {
    // A runtime with a choice of auth uses the one `cotal up` hands the host's manager
    // (COTAL_<RUNTIME>_AUTH, default auto).
    auth = adapter.auth({ parentEnv: env, authMode: authChoices({}, env)[adapter.name] });
  } catch (err) {
    return failedWith(id, title, err, "Set its COTAL_<RUNTIME>_AUTH to auto or one of the modes docs/runtimes.md lists.");
  }
  const head = `${found.path} ${version.text}${notes}; credentials: ${auth.summary}`;
  if (!auth.ready)
    return failed(
      id,
      title,
      `${head}. It cannot authenticate here: ${auth.problem ?? "no credentials"}`,
      auth.remedy ?? "Give it credentials (docs/runtimes.md).",
    );
  return pass(id, title, `${head}, present (not tried: doctor makes no model call, so a key that is set may still be refused).`);
}

/**
 * The first line `<cli> --version` prints. One that is still starting after the timeout (a cold
 * start on a loaded host) is not counted as broken: its version is said to be unknown.
 */
function cliVersion(path: string): Promise<{ ok: true; text: string } | { ok: false; why: string }> {
  return new Promise((resolve) => {
    execFile(path, ["--version"], { encoding: "utf8", timeout: VERSION_TIMEOUT_MS }, (err, stdout, stderr) => {
      const first = `${stdout}\n${stderr}`.split("\n").find((l) => l.trim() !== "");
      const said = first ? oneLine(first.trim()).slice(0, 200) : undefined;
      if (!err) return resolve({ ok: true, text: said ?? "(no version printed)" });
      const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: string | number | null; signal?: string | null };
      if (e.killed) return resolve({ ok: true, text: `(version unknown: \`--version\` did not answer within ${VERSION_TIMEOUT_MS / 1000} s)` });
      if (typeof e.code === "string") return resolve({ ok: false, why: `could not be started (${e.code})` });
      if (e.signal) return resolve({ ok: false, why: `was ended by ${e.signal}` });
      resolve({ ok: false, why: `exited with code ${e.code}${said ? `: ${said}` : ""}` });
    });
  });
}
