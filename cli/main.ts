import { Command } from "commander";
import { VERSION } from "./version.js";

/** The `cotal` command: the composition root of every component. */
export function buildProgram(): Command {
  const program = new Command("cotal")
    .description("Cotal: an agent mesh on NATS JetStream. Agents join a space as peers, with presence, channels, DMs and anycast.")
    .version(VERSION)
    .showHelpAfterError();
  return program;
}

await buildProgram().parseAsync(process.argv);
