// The shipped bundles (dist/connector.mjs, dist/hook.mjs), rebuilt when a source is newer, under a
// lock so parallel test files never read a half-written bundle.
import { execFileSync } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, statSync, unlinkSync } from "node:fs";
import path from "node:path";
import { projectRoot } from "../harness/claude-runner.js";

export const CONNECTOR_BUNDLE = path.join(projectRoot, "dist", "connector.mjs");
export const HOOK_BUNDLE = path.join(projectRoot, "dist", "hook.mjs");

function newestSource(): number {
  let newest = 0;
  for (const dir of ["connector", "broker", "schemas"]) {
    for (const f of readdirSync(path.join(projectRoot, dir), { recursive: true }) as string[]) {
      if (f.endsWith(".ts")) newest = Math.max(newest, statSync(path.join(projectRoot, dir, f)).mtimeMs);
    }
  }
  return newest;
}

function stale(): boolean {
  const src = newestSource();
  return [CONNECTOR_BUNDLE, HOOK_BUNDLE].some((b) => !existsSync(b) || statSync(b).mtimeMs < src);
}

/** Make sure the bundles exist and are not older than the sources. */
export function ensureBuilt(): void {
  if (!stale()) return;
  mkdirSync(path.join(projectRoot, "dist"), { recursive: true });
  const lock = path.join(projectRoot, "dist", ".test-build.lock");
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      closeSync(openSync(lock, "wx"));
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`could not take ${lock}; remove it if no build is running`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    }
  }
  try {
    if (stale()) execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: projectRoot, stdio: "inherit" });
  } finally {
    unlinkSync(lock);
  }
}
