import type { Command } from "commander";
import { z } from "zod";
import { MeshNotFoundError } from "../terminal/errors.js";
import { bringDown, type DownReport } from "../mesh-host/mesh-lifecycle.js";
import { findMeshRoot } from "../mesh-host/mesh-root.js";
import { printJson, printLines } from "../terminal/output.js";
import { parseInput } from "../terminal/validate.js";
import { stopTeamSeats } from "../team-file/team-apply.js";

/** `cotal down`: stop this project's mesh. */
export function registerDown(program: Command): void {
  program
    .command("down")
    .summary("stop the mesh started here (team seats, web dashboard, manager and its seats, mesh service, nats-server)")
    .description(
      "Stop the mesh of this project (.cotal/ found by walking up from here): the seats `cotal up -f` started (on any manager), a detached `cotal web`, " +
        "the manager (it stops and retires every seat it runs), the mesh service, then nats-server " +
        "(every node of a `--cluster`, together). " +
        "Only processes whose pid AND start time match the pid files are signalled. Stored messages stay in the " +
        "JetStream store; `cotal up` starts the mesh again with them.",
    )
    .option("--json", "print what was stopped as JSON")
    .action(async (raw: Record<string, unknown>) => {
      const flags = parseInput(z.object({ json: z.boolean().optional() }), raw);
      const root = findMeshRoot();
      if (!root) throw new MeshNotFoundError(process.cwd());
      const teamSeats = await stopTeamSeats(root);
      const report = await bringDown(root);
      if (flags.json) printJson({ ...report, teamSeats });
      else printLines(...teamSeats, ...describeDown(report));
    });
}

function describeDown(r: DownReport): string[] {
  const line = (what: string, s: DownReport["natsServer"]) => {
    switch (s.result) {
      case "stopped":
        return `${what}: stopped (pid ${s.pid})`;
      case "killed":
        return `${what}: killed (pid ${s.pid} ignored SIGTERM)`;
      case "not-running":
        return `${what}: was not running (stale pid ${s.pid} removed)`;
      case "not-recorded":
        return `${what}: was not running`;
    }
  };
  const nats = r.nodes ? r.nodes.map((n, i) => line(`nats-server-n${i + 1}`, n)) : [line("nats-server", r.natsServer)];
  const web = r.web.result === "not-recorded" ? [] : [line("web dashboard", r.web)];
  return [`mesh: ${r.root}`, ...web, line("manager", r.manager), line("mesh service", r.meshService), ...nats];
}
