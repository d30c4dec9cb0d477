// A launch's private directory (runtime/launch-dir.ts) stays inside the runtime directory whatever
// identity it is given: names that could climb out or hide are refused, never cleaned up.
import { describe, expect, it } from "vitest";
import { privateLaunchDir } from "../../runtime/index.js";

const fail = (message: string) => new Error(message);
const at = (name: string, space = "team") => privateLaunchDir({ name, space, cwd: "/work", runtimeDir: "/run/cotal" }, "cotal-x-", fail);

describe("a launch's private directory", () => {
  it("is <prefix><space>-<name>-<random> directly under the runtime directory", () => {
    expect(at("alice")).toMatch(/^\/run\/cotal\/cotal-x-team-alice-[0-9a-f]{12}$/);
    expect(at("alice")).not.toBe(at("alice"));
  });

  it.each(["../etc", "a/b", ".", "", "a b", "a.b", "x".repeat(65)])("refuses the name %j", (name) => {
    expect(() => at(name)).toThrow(/Invalid identity/);
    expect(() => at("alice", name)).toThrow(/Invalid identity/);
  });

  it("refuses relative working and runtime directories", () => {
    expect(() => privateLaunchDir({ name: "a", space: "s", cwd: "work", runtimeDir: "/run" }, "p-", fail)).toThrow(/absolute path/);
    expect(() => privateLaunchDir({ name: "a", space: "s", cwd: "/work", runtimeDir: "run" }, "p-", fail)).toThrow(/absolute path/);
  });
});
