// The services' own bundle (dist/cotal-service.mjs): `cotal up` starts the mesh service and the
// manager from it. A long-lived process loads only what it runs, not the whole CLI (the console's
// Ink and React, every other command): less to read and compile at each start, less heap held for
// as long as the mesh is up (figures in docs/performance.md). Same command lines as the
// CLI's (`mesh serve …`, `manager …`, `agent echo`), so `cotal status` and `cotal down` find them.
import type { Command } from "commander";
import { registerManager } from "./commands/manager.js";
import { registerMeshServe } from "./commands/mesh-serve.js";
import { rootCommand, runProgram } from "./root-command.js";

/** The `cotal` program of the services' bundle: the mesh service, the manager and its seats. */
export function buildServiceProgram(): Command {
  const program = rootCommand("Cotal's services, as `cotal up` starts them (run `cotal` for the CLI).");
  registerMeshServe(program);
  registerManager(program);
  return program;
}

void runProgram(process.argv, buildServiceProgram);
