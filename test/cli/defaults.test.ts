// What the CLI assumes when not told: the acting name (the OS user, refused when not a valid name)
// and the mesh mode.
import { describe, expect, it } from "vitest";
import { defaultActorName } from "../../cli/identity/os-user-name.js";
import { chooseMode } from "../../cli/mesh-host/mode.js";

describe("names and modes", () => {
  it("the default --as name is the OS user name, refused (never rewritten) when it is not a valid name", () => {
    expect(defaultActorName(() => "alice_1")).toBe("alice_1");
    for (const bad of ["first.last", "first-last", "a b", ""]) {
      expect(() => defaultActorName(() => bad)).toThrow(/Pass --as <name>/);
    }
  });

  it("up is static (authenticated) by default, on any host; --open is silent on loopback and warns elsewhere", () => {
    expect(chooseMode({ host: "127.0.0.1" })).toEqual({ mode: "static", warnings: [] });
    expect(chooseMode({ host: "0.0.0.0" })).toEqual({ mode: "static", warnings: [] });
    expect(chooseMode({ open: true, host: "127.0.0.1" })).toEqual({ mode: "open", warnings: [] });
    expect(chooseMode({ open: true, host: "0.0.0.0" }).warnings).toEqual([expect.stringContaining("no authentication")]);
  });
});
