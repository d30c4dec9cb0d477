// Who `cotal up` names the person at the mesh host (cli/identity/person.ts): `--me`, else the name an earlier
// `up` recorded, else the OS login name, which is refused, never rewritten, when it is not a name.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { UsageError } from "../../../cli/terminal/errors.js";
import { MeshRoot } from "../../../cli/mesh-host/mesh-root.js";
import { chooseMe } from "../../../cli/identity/person.js";

const dirs: string[] = [];
function root(): MeshRoot {
  const dir = mkdtempSync(join(tmpdir(), "cotal-person-name-"));
  dirs.push(dir);
  return new MeshRoot(dir);
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("the name cotal up gives the person at the mesh host", () => {
  it("is the login name when nothing else says", () => {
    expect(chooseMe(root(), undefined, () => "alice")).toBe("alice");
  });

  it("is --me over the login name", () => {
    expect(chooseMe(root(), "bob", () => "alice")).toBe("bob");
  });

  it("refuses a login name that is not a valid name, naming --me, and does not rewrite it", () => {
    let err: unknown;
    try {
      chooseMe(root(), undefined, () => "first.last");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).message).toContain('Your OS user name "first.last" is not a valid Cotal name');
    expect((err as UsageError).remedy).toContain("Pass --me <name>");
  });
});
