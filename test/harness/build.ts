// The shipped bundles, rebuilt for tests only when a source is newer than one of them, under a
// lock so parallel test files never read a half-written bundle (and `npm test`, which has just
// built them, never sees dist/ rewritten).
import { execFileSync } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, statSync, unlinkSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const projectRoot = fileURLToPath(new URL("../../", import.meta.url));
const dist = path.join(projectRoot, "dist");
export const BUNDLES = {
  cli: path.join(dist, "cotal.mjs"),
  /** The mesh service's and the manager's (cli/service-main.ts): `cotal up` starts them from it. */
  service: path.join(dist, "cotal-service.mjs"),
  connector: path.join(dist, "connector.mjs"),
  hook: path.join(dist, "hook.mjs"),
  /** The build copies connector and hook into the plugin tree too. */
  pluginConnector: path.join(projectRoot, "plugin", "bin", "connector.mjs"),
} as const;

function newestSource(): number {
  let newest = 0;
  for (const dir of ["schemas", "runtime", "broker", "claude", "codex", "opencode", "gemini", "pi", "copilot", "connector", "manager", "web", "cli", "bench"]) {
    if (!existsSync(path.join(projectRoot, dir))) continue;
    for (const f of readdirSync(path.join(projectRoot, dir), { recursive: true }) as string[]) {
      if (f.endsWith(".ts")) newest = Math.max(newest, statSync(path.join(projectRoot, dir, f)).mtimeMs);
    }
  }
  for (const f of ["package.json", "scripts/build.mjs", "scripts/zod-locales-en.mjs"]) newest = Math.max(newest, statSync(path.join(projectRoot, f)).mtimeMs);
  return newest;
}

function stale(): boolean {
  const src = newestSource();
  return Object.values(BUNDLES).some((b) => !existsSync(b) || statSync(b).mtimeMs < src);
}

/** Make sure every bundle exists and is not older than the sources. */
export function ensureBuilt(): void {
  if (!stale()) return;
  mkdirSync(dist, { recursive: true });
  const lock = path.join(dist, ".test-build.lock");
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
