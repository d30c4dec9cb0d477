import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import type { Command } from "commander";
import { z } from "zod";
import { MeshNotFoundError } from "../errors.js";
import { meshNodes } from "../cluster-nodes.js";
import { findMeshRoot, type MeshRoot, type ServiceLog } from "../mesh-root.js";
import { note } from "../output.js";
import { parseInput, positiveInt } from "../validate.js";

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
    .action(async (component: string | undefined, raw: Record<string, unknown>) => {
      const f = parseInput(LogsFlags, { ...raw, component }, { component: "[component]" });
      const root = findMeshRoot();
      if (!root) throw new MeshNotFoundError(process.cwd());
      // On a cluster (`cotal up --cluster N`) nats-server names every node's log.
      const info = root.readInfo();
      const nodes = info?.cluster ? meshNodes(root, info).map((n) => n.name) : ["nats-server" as const];
      const expand = (c: string): Component[] => (c === "nats-server" ? nodes : [c as Component]);
      const which: readonly Component[] = f.component ? expand(f.component) : COMPONENTS.flatMap(expand);
      const prefix = which.length > 1;
      const offsets = new Map<Component, number>();
      for (const c of which) offsets.set(c, printTail(root, c, f.lines, prefix));
      if (!f.follow) return;
      await follow(root, which, offsets, prefix);
    });
}

/** Print the last `lines` lines of a component's log; returns the size read up to. */
function printTail(root: MeshRoot, c: Component, lines: number, prefix: boolean): number {
  const file = root.log(c);
  if (!existsSync(file)) {
    note(`${c}: no log yet (${file}); \`cotal up\` starts the mesh.`);
    return 0;
  }
  const { text, size } = readFrom(file, 0);
  const all = text.split("\n");
  if (all.at(-1) === "") all.pop();
  write(all.slice(-lines), c, prefix);
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

function write(lines: string[], c: Component, prefix: boolean): void {
  if (lines.length) process.stdout.write(lines.map((l) => (prefix ? `${c} | ${l}` : l)).join("\n") + "\n");
}

/** Poll the logs (they are appended by other processes) until SIGINT/SIGTERM. */
async function follow(root: MeshRoot, which: readonly Component[], offsets: Map<Component, number>, prefix: boolean): Promise<void> {
  const partial = new Map<Component, string>();
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      for (const c of which) {
        const file = root.log(c);
        if (!existsSync(file)) continue;
        const { text, size } = readFrom(file, offsets.get(c) ?? 0);
        offsets.set(c, size);
        const parts = ((partial.get(c) ?? "") + text).split("\n");
        partial.set(c, parts.pop() ?? "");
        write(parts, c, prefix);
      }
    }, 300);
    for (const sig of ["SIGINT", "SIGTERM"] as const) {
      process.once(sig, () => {
        clearInterval(timer);
        resolve();
      });
    }
  });
}
