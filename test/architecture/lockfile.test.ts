// `npm ci` refuses a lock that does not hold every dependency package.json's tree names, optional
// platform packages included ("Missing: opencode-darwin-arm64@ from lock file"), and CI starts
// with `npm ci`. An `npm install` against a registry that lacks some platforms' packages leaves
// them out silently: this catches it before CI does.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../harness/build.js";

interface LockPackage {
  version?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}
const lock = JSON.parse(readFileSync(join(projectRoot, "package-lock.json"), "utf8")) as { packages: Record<string, LockPackage> };
const pkg = JSON.parse(readFileSync(join(projectRoot, "package.json"), "utf8")) as Record<string, Record<string, string> | undefined>;

/** Where node would resolve `name` from the package at `at` (its own node_modules, then up). */
function resolves(at: string, name: string): boolean {
  for (let dir = at; ;) {
    if (`${dir ? `${dir}/` : ""}node_modules/${name}` in lock.packages) return true;
    if (!dir) return false;
    const up = dir.lastIndexOf("/node_modules/");
    dir = up < 0 ? "" : dir.slice(0, up);
  }
}

describe("package-lock.json", () => {
  it("holds every dependency of package.json and every (optional) dependency of each locked package", () => {
    const missing: string[] = [];
    for (const field of ["dependencies", "devDependencies", "optionalDependencies"])
      for (const name of Object.keys(pkg[field] ?? {})) if (!resolves("", name)) missing.push(`package.json ${field}: ${name}`);
    for (const [at, p] of Object.entries(lock.packages)) {
      if (!at) continue;
      for (const name of Object.keys({ ...p.dependencies, ...p.optionalDependencies })) if (!resolves(at, name)) missing.push(`${at}: ${name}`);
    }
    expect(missing, "run `npm install --package-lock-only`; a platform package the registry lacks needs its entry (os/cpu) by hand").toEqual([]);
  });
});
