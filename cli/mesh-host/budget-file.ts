import { join } from "node:path";
import type { MeshTarget } from "../mesh-client/mesh-target.js";
import { findMeshRoot } from "./mesh-root.js";

/**
 * The mesh's `.cotal/budget.json` (docs/runs.md) a manager reads its caps from: that of the mesh
 * root its target came from, else that of the root here when its mesh.json describes this server
 * and space — the manager `cotal up` starts is given --server and --space and runs in the project,
 * so without this it never read the file. A manager of another mesh reads none.
 */
export function meshBudgetFile(target: Pick<MeshTarget, "root" | "server" | "space">, cwd: string = process.cwd()): string | undefined {
  if (target.root) return join(target.root.dir, "budget.json");
  const root = findMeshRoot(cwd);
  let info;
  try {
    info = root?.readInfo();
  } catch {
    return undefined; // an unreadable mesh.json describes no mesh
  }
  return root && info?.server === target.server && info.space === target.space ? join(root.dir, "budget.json") : undefined;
}
