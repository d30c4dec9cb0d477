import type { Command } from "commander";
import { z } from "zod";
import { RUNTIMES } from "../../runtimes/index.js";
import { jsonOption, meshOptions } from "../mesh-client/mesh-target.js";
import { describeReport } from "../doctor/check.js";
import { runDoctor } from "../doctor/run.js";
import { EXIT } from "../terminal/errors.js";
import { printJson, printLines } from "../terminal/output.js";
import { parseInput } from "../terminal/validate.js";

const RUNTIME_NAMES = RUNTIMES.map((r) => r.name);
/** `--runtime claude,codex`: names of the registry's runtimes. */
const RuntimeList = z
  .string()
  .transform((s) => s.split(",").map((x) => x.trim()))
  .refine((names) => names.every((n) => RUNTIME_NAMES.includes(n)), `--runtime takes runtimes of ${RUNTIME_NAMES.join(", ")}, comma-separated`);

/** `cotal doctor`: what is wrong with this host (and its mesh) for Cotal, each with the fix. */
export function registerDoctor(program: Command): void {
  const cmd = program
    .command("doctor")
    .summary("check this host for Cotal: nats-server, agent CLIs, plugin, .cotal modes, ports, disk, clock, the mesh")
    .description(
      "Check what Cotal needs here and say, for each, pass, warn, fail or skipped, with the fix: nats-server found and new " +
        `enough; each agent CLI (${RUNTIMES.map((r) => r.name).join(", ")}) found, its version, and whether its credentials are here; a runtime this host's agent files, cotal.yaml or --runtime name (Claude when none does) fails when it cannot run, any other only warns; credentials found are not tried; the Claude plugin ` +
        "installed and current; the secrets in .cotal/ (and the credential used) private (folders 0700, files 0600); the " +
        "mesh's ports free or held by its own server; disk room for what the space's streams may store; this host's clock " +
        "against the server's; the mesh reachable with this credential, its mesh service answering. Checks that do not " +
        "apply here (no mesh yet) are skipped, saying why. Exits 0 when no check failed, 1 otherwise.",
    );
  cmd.option(
    "--runtime <names>",
    `runtimes this host must run (comma-separated: ${RUNTIMES.map((r) => r.name).join(", ")}), besides those its agent files and cotal.yaml name; a runtime nobody names only warns`,
  );
  jsonOption(meshOptions(cmd)).action(async (raw: Record<string, unknown>) => {
    const flags = parseInput(z.object({ json: z.boolean().optional(), runtime: RuntimeList.optional() }).passthrough(), raw);
    const mesh = Object.fromEntries(Object.entries(raw).filter(([k]) => k !== "runtime"));
    const r = await runDoctor(mesh, flags.runtime);
    if (flags.json) printJson(r);
    else printLines(...describeReport(r));
    if (!r.ok) process.exitCode = EXIT.failed;
  });
}
