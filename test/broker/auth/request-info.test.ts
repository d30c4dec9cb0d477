// Who the server says sent a control request (the Nats-Request-Info header), read by the mesh
// service before it lets a credential act as anyone: a header it cannot read names nobody, so a
// privileged command without one is refused (request-info.ts). Pure: no server.
import { describe, expect, test } from "vitest";
import { senderOf } from "../../../broker/internal.js";

const USER = `U${"A".repeat(55)}`;
const info = (o: unknown) => JSON.stringify(o);

describe("the sender a request-info header names", () => {
  test("the user, its JWT's name and the profile its signed tags carry", () => {
    expect(senderOf(info({ user: USER, name_tag: "local.hostb", tags: ["x:y", "cotal-profile:manager"] }))).toEqual({
      user: USER,
      name: "local.hostb",
      profile: "manager",
    });
  });

  test("a tag naming no profile Cotal mints, or none at all, gives no profile", () => {
    expect(senderOf(info({ user: USER, name_tag: "local.a", tags: ["cotal-profile:root"] }))?.profile).toBeUndefined();
    expect(senderOf(info({ user: USER, name_tag: "local.a", tags: ["cotal-space:s"] }))?.profile).toBeUndefined();
    expect(senderOf(info({ user: USER, name_tag: "local.a" }))).toEqual({ user: USER, name: "local.a", profile: undefined });
  });

  test("a credential without a name is named by nobody (never by another's name)", () => {
    expect(senderOf(info({ user: USER }))).toEqual({ user: USER, name: "", profile: undefined });
  });

  test.each([
    ["no header", undefined],
    ["an empty one", ""],
    ["one that is not JSON", "{user"],
    ["a user that is no user key", info({ user: "local.cotal_cli", name_tag: "local.cotal_cli", tags: ["cotal-profile:cli"] })],
    ["no user", info({ name_tag: "local.cotal_cli", tags: ["cotal-profile:cli"] })],
  ])("%s names no sender", (_what, header) => {
    expect(senderOf(header)).toBeUndefined();
  });
});
