// This host's manager as this host's files say (its state dir and instance id); reaching any
// manager over the mesh is mesh-client/manager-calls.ts.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ManagerInstance } from "../../schemas/index.js";
import type { MeshTarget } from "../mesh-client/mesh-target.js";
import { managerStateDir } from "./manager-process.js";

/** This host's manager as this host's own files say. */
export interface LocalManager {
  /** Its state dir: its instance id, its tmux socket, its seats' folders. */
  stateDir: string;
  instance: string;
}

/**
 * The manager of this host as this host's own files say: its state dir (`--state-dir`, else the
 * default `cotal manager` uses) and the instance id kept there; undefined when no manager has run
 * with that state dir. Whether a seat runs here, and how its terminal opens, is decided from this,
 * never from a heartbeat's host name or a `ps` reply: other principals write those.
 */
export function localManager(target: Pick<MeshTarget, "root" | "space">, stateDirFlag?: string): LocalManager | undefined {
  const stateDir = managerStateDir(target, stateDirFlag);
  const file = join(stateDir, "instance");
  if (!existsSync(file)) return undefined;
  const instance = ManagerInstance.safeParse(readFileSync(file, "utf8").trim());
  return instance.success ? { stateDir, instance: instance.data } : undefined;
}
