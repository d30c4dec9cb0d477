// `cotal doctor`: every check, in the order a person fixes things (the tools, then this host's
// files and ports, then the mesh), as one report.
import { COTAL_VERSION } from "../../schemas/index.js";
import { resolveTarget, type MeshFlags, type MeshTarget } from "../mesh-client/mesh-target.js";
import { MeshNotFoundError, UsageError } from "../terminal/errors.js";
import { findMeshRoot, type MeshInfo, type MeshRoot } from "../mesh-host/mesh-root.js";
import { failedWith, report, type DoctorCheck, type DoctorReport } from "./check.js";
import { diskCheck } from "./disk.js";
import { meshChecks } from "./mesh.js";
import { modesCheck } from "./modes.js";
import { natsServerCheck } from "./nats-server.js";
import { pluginCheck } from "./plugin.js";
import { portsCheck } from "./ports.js";
import { neededRuntimes } from "./needed-runtimes.js";
import { runtimeChecks } from "./runtimes.js";

/** Run every check. Bad flags throw (exit 2); everything else is a verdict in the report. */
export async function runDoctor(flags: MeshFlags, runtimes: readonly string[] = [], cwd: string = process.cwd()): Promise<DoctorReport> {
  let target: MeshTarget | undefined;
  let targetError: unknown;
  try {
    target = resolveTarget(flags, cwd);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    if (!(err instanceof MeshNotFoundError)) targetError = err;
  }
  // Named by --server and --space: the mesh is elsewhere, and this folder's .cotal/ is not its.
  const remote = target !== undefined && target.root === undefined;
  const root: MeshRoot | undefined = remote ? undefined : (target?.root ?? findMeshRoot(cwd));
  let info: MeshInfo | undefined;
  let infoCheck: DoctorCheck | undefined;
  try {
    info = target?.info ?? root?.readInfo();
  } catch (err) {
    infoCheck = failedWith("mesh.json", "mesh.json", err, "Delete it and run `cotal up` again.");
  }
  const creds = target?.creds ?? flags.creds;
  // What waits on other processes or the network runs at once; the report keeps the order below.
  const [runtimeVerdicts, plugin, ports, mesh] = await Promise.all([
    runtimeChecks(neededRuntimes(root?.project ?? cwd, runtimes)),
    pluginCheck(root?.project ?? cwd),
    portsCheck(root, info, remote),
    meshChecks(target, targetError),
  ]);
  return report(COTAL_VERSION, [
    natsServerCheck(),
    ...runtimeVerdicts,
    plugin,
    ...(infoCheck ? [infoCheck] : []),
    modesCheck(root, info, creds),
    ports,
    diskCheck(root, info, remote),
    ...mesh,
  ]);
}
