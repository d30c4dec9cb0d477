import type { Command } from "commander";
import { z } from "zod";
import { RUNTIMES } from "../../manager/index.js";
import { jsonOption, meshOptions } from "../context.js";
import { describeReport } from "../doctor/check.js";
import { runDoctor } from "../doctor/run.js";
import { EXIT } from "../errors.js";
import { printJson, printLines } from "../output.js";
import { parseInput } from "../validate.js";

/** `cotal doctor`: what is wrong with this host (and its mesh) for Cotal, each with the fix. */
export function registerDoctor(program: Command): void {
  const cmd = program
    .command("doctor")
    .summary("check this host for Cotal: nats-server, agent CLIs, plugin, .cotal modes, ports, disk, clock, the mesh")
    .description(
      "Check what Cotal needs here and say, for each, pass, warn, fail or skipped, with the fix: nats-server found and new " +
        `enough; each agent CLI (${RUNTIMES.map((r) => r.name).join(", ")}) found, its version, and whether its credentials are here; the Claude plugin ` +
        "installed and current; the secrets in .cotal/ (and the credential used) private (folders 0700, files 0600); the " +
        "mesh's ports free or held by its own server; disk room for what the space's streams may store; this host's clock " +
        "against the server's; the mesh reachable with this credential, its mesh service answering. Checks that do not " +
        "apply here (no mesh yet) are skipped, saying why. Exits 0 when no check failed, 1 otherwise.",
    );
  jsonOption(meshOptions(cmd)).action(async (raw: Record<string, unknown>) => {
    const flags = parseInput(z.object({ json: z.boolean().optional() }).passthrough(), raw);
    const r = await runDoctor(raw);
    if (flags.json) printJson(r);
    else printLines(...describeReport(r));
    if (!r.ok) process.exitCode = EXIT.failed;
  });
}
