// Principals: ids, parsing, the dashed form durable names use, and the local default.
import { describe, expect, it } from "vitest";
import { assertChannel, assertToken, InvalidTokenError, parsePrincipal, principal, principalDashed, principalId } from "../../schemas/index.js";

describe("principals", () => {
  it("ids and dashed forms", () => {
    expect(principalId(principal("acme", "bob"))).toBe("acme.bob");
    expect(principalDashed(principal("acme", "bob"))).toBe("acme-bob");
  });
  it("parse a bare name as local, an id as itself, and refuse anything else", () => {
    expect(parsePrincipal("bob")).toEqual({ owner: "local", actor: "bob" });
    expect(parsePrincipal("acme.bob")).toEqual({ owner: "acme", actor: "bob" });
    expect(() => parsePrincipal("a.b.c")).toThrow(InvalidTokenError);
    expect(() => parsePrincipal("a.b.c")).toThrow(/Invalid principal "a.b.c".*<owner>.<actor> with each part of letters, digits and '_'/);
    expect(() => parsePrincipal("ac-me.bob")).toThrow(/Invalid owner "ac-me"/);
    expect(() => parsePrincipal("acme.b-ob")).toThrow(/Invalid actor name "b-ob"/);
  });
  it("refuse what is not a string at all", () => {
    expect(() => assertToken("name", "role", 42 as unknown as string)).toThrow(/Invalid role "42"/);
    expect(() => assertChannel(undefined as unknown as string)).toThrow(/Invalid channel "undefined"/);
  });
});
