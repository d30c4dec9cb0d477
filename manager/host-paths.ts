import { homedir, tmpdir } from "node:os";

/**
 * Absolute paths of the manager's host, worded for a caller on another principal's side: a run's
 * error (a missing runtime, a file it could not write) would otherwise tell any agent that may
 * call `run` where this host keeps its state and home. The operator on the
 * host keeps the full text.
 */
export function redactHostPaths(text: string, roots: { stateDir: string; cwd: string }): string {
  const named: Array<[string, string]> = [
    [roots.stateDir, "<manager state>"],
    [roots.cwd, "<manager folder>"],
    [homedir(), "~"],
    [tmpdir(), "<tmp>"],
  ];
  // Longest first: the state dir usually sits inside the folder or the home.
  named.sort((a, b) => b[0].length - a[0].length);
  let out = text;
  for (const [path, label] of named) if (path.length > 1) out = out.split(path).join(label);
  return out;
}
