// Where Cotal itself is installed: its package folder, which holds the bundles, the plugin tree and
// the scripts the CLI runs.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { CommandFailedError } from "../terminal/errors.js";

/** The name in Cotal's own package.json. */
const PACKAGE_NAME = "cotal";

let cached: string | undefined;

/**
 * The folder holding Cotal's own package.json, found by walking up from this file to the first
 * package.json named "cotal". Works from the bundle (`dist/cotal.mjs`, also when reached through
 * the `node_modules/.bin` link, which Node resolves) and from source (`cli/`).
 */
export function packageRoot(): string {
  cached ??= findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));
  return cached;
}

/** The nearest folder at or above `from` whose package.json is named "cotal". */
export function findPackageRoot(from: string): string {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    if (isCotalPackage(path.join(dir, "package.json"))) return dir;
    if (path.dirname(dir) === dir) break;
  }
  throw new CommandFailedError(`Cannot find Cotal's package folder (a package.json named "${PACKAGE_NAME}") above ${from}.`, {
    remedy: "Run cotal from its installed package (npx cotal …) or from a checkout of the repository.",
  });
}

function isCotalPackage(file: string): boolean {
  try {
    return (JSON.parse(readFileSync(file, "utf8")) as { name?: unknown }).name === PACKAGE_NAME;
  } catch {
    return false;
  }
}
