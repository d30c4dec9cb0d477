// The `cotal` program: every command registered on root-command.ts's root (service-main.ts registers
// the services' few). What cli/main.ts runs, and what tests walk in-process
// (test/cli/help-docs.test.ts reads each command's help from it, no process per command).
import type { Command } from "commander";
import { registerChannels } from "./commands/channels.js";
import { registerCompletion } from "./commands/completion.js";
import { registerConsole } from "./commands/console.js";
import { registerDeliver } from "./commands/deliver.js";
import { registerDoctor } from "./commands/doctor.js";
import { registerDown } from "./commands/down.js";
import { registerHistory } from "./commands/history.js";
import { registerFetch } from "./commands/fetch.js";
import { registerListen } from "./commands/listen.js";
import { registerInbox } from "./commands/inbox.js";
import { registerApprovals } from "./commands/approvals.js";
import { registerLogs } from "./commands/logs.js";
import { registerMeshServe } from "./commands/mesh-serve.js";
import { registerMint } from "./commands/mint.js";
import { registerHook } from "./commands/hook.js";
import { registerRoster } from "./commands/roster.js";
import { registerSend } from "./commands/send.js";
import { registerSetup } from "./commands/setup.js";
import { registerStatus } from "./commands/status.js";
import { registerUp } from "./commands/up.js";
import { registerManager } from "./commands/manager.js";
import { registerSeats } from "./commands/seats.js";
import { registerRun } from "./commands/run.js";
import { registerBudget } from "./commands/budget.js";
import { registerWeb } from "./commands/web.js";
import { registerBackup } from "./commands/backup.js";
import { rootCommand } from "./root-command.js";

/** The `cotal` command: the composition root of every component. */
export function buildProgram(): Command {
  const program = rootCommand("Cotal: an agent mesh on NATS JetStream. Agents join a space as peers, with presence, channels, DMs and anycast.");
  registerUp(program);
  registerDown(program);
  registerStatus(program);
  registerLogs(program);
  registerSend(program);
  registerListen(program);
  registerInbox(program);
  registerApprovals(program);
  registerHistory(program);
  registerFetch(program);
  registerRoster(program);
  registerConsole(program);
  registerWeb(program);
  registerChannels(program);
  registerDeliver(program);
  registerMint(program);
  registerHook(program);
  registerSetup(program);
  registerSeats(program);
  registerRun(program);
  registerBudget(program);
  registerBackup(program);
  registerManager(program);
  registerMeshServe(program);
  registerDoctor(program);
  registerCompletion(program);
  program.addHelpText(
    "after",
    "\nExit codes: 0 done, 1 failed, 2 bad input (fix the command line), 3 no mesh found or the server cannot be reached, " +
      "4 the server refused the credential, 5 the credential may not do this, 6 the mesh service did not answer.\n" +
      "Without --server/--space (or COTAL_SERVER/COTAL_SPACE), commands use the mesh of the nearest .cotal/ folder at or above the working directory.",
  );
  return program;
}
