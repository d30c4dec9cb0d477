import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import { LogTail } from "../mesh-host/log-tail.js";
import type { Command } from "commander";
import { z } from "zod";
import { MeshNotFoundError } from "../terminal/errors.js";
import { meshNodes } from "../mesh-host/cluster-nodes.js";
import { findMeshRoot, type MeshRoot, type ServiceLog } from "../mesh-host/mesh-root.js";
import { logLineAsJson, logLineForPeople, parseLogLine, type LogsFormat } from "../terminal/logging.js";
import { note } from "../terminal/output.js";
import { parseInput, positiveInt } from "../terminal/validate.js";

const COMPONENTS = ["nats-server", "mesh-service", "manager"] as const;
/** A log of `.cotal/logs/`: a component's, or one node's of a cluster (`nats-server-n2`). */
type Component = ServiceLog;

const LogsFlags = z.object({
  component: z
    .string()
    .regex(/^(nats-server(-n\d+)?|mesh-service|manager)$/, "component must be nats-server, mesh-service or manager (nats-server-nK: one node of a cluster)")
    .optional(),
  lines: positiveInt("--lines").default(50),
  follow: z.boolean().optional(),
  format: z.enum(["human", "json"], { message: "--format: use human or json" }).optional(),
  json: z.boolean().optional(),
});

/** `cotal logs`: what the background processes of this project's mesh wrote. */
export function registerLogs(program: Command): void {
  program
    .command("logs")
    .summary("show the logs of the mesh's nats-server, mesh service and manager")
    .description(
      "Print the last lines of the logs the background processes of this project's mesh write in .cotal/logs/ " +
        "(nats-server.log, or nats-server-nK.log per node of a cluster, mesh-service.log, manager.log); with --follow, keep printing what they add until Ctrl-C.",
    )
    .argument("[component]", "nats-server, mesh-service or manager (default: all)")
    .option("--lines <n>", "how many of the last lines to print (default 50)")
    .option("-f, --follow", "keep printing new lines until Ctrl-C")
    .option(
      "--format <format>",
      "human (time, level, component, message, fields) or json (one pino-shaped object per line); default: human on a terminal, json when piped",
    )
    .option("--json", "the same as --format json")
    .action(async (component: string | undefined, raw: Record<string, unknown>) => {
      const f = parseInput(LogsFlags, { ...raw, component }, { component: "[component]", format: "--format" });
      const format: LogsFormat = f.format ?? (f.json || !process.stdout.isTTY ? "json" : "human");
      const root = findMeshRoot();
      if (!root) throw new MeshNotFoundError(process.cwd());
      // On a cluster (`cotal up --cluster N`) nats-server names every node's log.
      const info = root.readInfo();
      const nodes = info?.cluster ? meshNodes(root, info).map((n) => n.name) : ["nats-server" as const];
      const expand = (c: string): Component[] => (c === "nats-server" ? nodes : [c as Component]);
      const which: readonly Component[] = f.component ? expand(f.component) : COMPONENTS.flatMap(expand);
      const write = writer(format, which.length > 1);
      const offsets = new Map<Component, number>();
      for (const c of which) offsets.set(c, printTail(root, c, f.lines, write));
      if (!f.follow) return;
      await follow(root, which, offsets, write);
    });
}

/** Print the last `lines` lines of a component's log; returns the size read up to. */
function printTail(root: MeshRoot, c: Component, lines: number, write: Writer): number {
  const file = root.log(c);
  if (!existsSync(file)) {
    note(`${c}: no log yet (${file}); \`cotal up\` starts the mesh.`);
    return 0;
  }
  const { text, size } = readFrom(file, 0);
  const all = text.split("\n");
  if (all.at(-1) === "") all.pop();
  write(all.slice(-lines), c);
  return size;
}

function readFrom(file: string, offset: number): { text: string; size: number } {
  const size = statSync(file).size;
  const start = size < offset ? 0 : offset; // truncated or rotated: read it again from the start
  const buf = Buffer.alloc(size - start);
  const fd = openSync(file, "r");
  try {
    readSync(fd, buf, 0, buf.length, start);
  } finally {
    closeSync(fd);
  }
  return { text: buf.toString("utf8"), size };
}

type Writer = (lines: string[], c: Component) => void;

/**
 * Lines for a person (each prefixed with its log when several are shown), or one JSON object per
 * line carrying its log's name. Either way a line's control characters are escaped: log records
 * quote peers (names, channels, refused subjects), and a raw escape would reach the terminal.
 */
function writer(format: LogsFormat, prefix: boolean): Writer {
  return (lines, c) => {
    if (!lines.length) return;
    const out = lines.map((l) => {
      const entry = parseLogLine(l);
      return format === "json" ? logLineAsJson(entry, c) : `${prefix ? `${c} | ` : ""}${logLineForPeople(entry)}`;
    });
    process.stdout.write(out.join("\n") + "\n");
  };
}

/**
 * Poll the logs (they are appended by other processes) until SIGINT/SIGTERM, across rotations
 * (LogTail): nothing written before a rotation is skipped unless a file rotated twice between two
 * polls (300 ms apart; each rotation takes a full file of LOG_BOUNDS.maxBytes).
 */
async function follow(root: MeshRoot, which: readonly Component[], offsets: Map<Component, number>, write: Writer): Promise<void> {
  const tails = new Map(which.map((c) => [c, new LogTail(root.log(c), offsets.get(c) ?? 0)]));
  const partial = new Map<Component, string>();
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      for (const c of which) {
        const parts = ((partial.get(c) ?? "") + tails.get(c)!.read()).split("\n");
        partial.set(c, parts.pop() ?? "");
        write(parts, c);
      }
    }, 300);
    for (const sig of ["SIGINT", "SIGTERM"] as const) {
      process.once(sig, () => {
        clearInterval(timer);
        for (const t of tails.values()) t.close();
        resolve();
      });
    }
  });
}
