// The `cotal` command (dist/cotal.cjs, run by the dist/cotal.mjs launcher): the program of
// cli/cotal-program.ts on this process's arguments.
import { buildProgram } from "./cotal-program.js";
import { runProgram } from "./root-command.js";

void runProgram(process.argv, buildProgram);
