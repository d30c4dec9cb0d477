// Transcript carry on the wire: the transfer subjects (one per chunk, so a chunk is written once and
// a resumed upload finds what the broker holds), the sizes a chunk and a transcript may have, and
// the ids and claims a command takes.
import { describe, expect, it } from "vitest";
import {
  CARRY_CHUNK_BYTES,
  CARRY_CHUNK_OVERHEAD,
  CARRY_COMMANDS,
  CARRY_MAX_BYTES,
  CarryClaim,
  InvalidTokenError,
  SessionId,
  XFER_COMMANDS,
  xferChunkIndex,
  xferChunkSubject,
  xferFilter,
  xferObjectFilter,
} from "../../schemas/index.js";

const hex = "0123456789abcdef".repeat(4);
const digest = `sha256:${hex}`;
const session = "0b6c1f2e-3d4a-4b5c-8d9e-0f1a2b3c4d5e";

describe("transfer subjects", () => {
  it("one subject per chunk, under the instance's and the transfer's filters", () => {
    expect(xferFilter("team", "hostb")).toBe("cotal.team.xfer.hostb.>");
    expect(xferObjectFilter("team", "hostb", digest)).toBe(`cotal.team.xfer.hostb.${hex}.*`);
    expect(xferChunkSubject("team", "hostb", digest, 0)).toBe(`cotal.team.xfer.hostb.${hex}.0`);
    expect(xferChunkSubject("team", "hostb", digest, 12)).toBe(`cotal.team.xfer.hostb.${hex}.12`);
  });

  it("a digest that is not sha256 and 64 lowercase hex is refused, naming it", () => {
    expect(() => xferObjectFilter("team", "hostb", hex)).toThrow(`not a sha256 digest: ${hex}`);
    expect(() => xferObjectFilter("team", "hostb", `sha256:${hex.toUpperCase()}`)).toThrow("not a sha256 digest");
    expect(() => xferObjectFilter("team", "hostb", `sha256:${hex}0`)).toThrow("not a sha256 digest");
    expect(() => xferObjectFilter("team", "hostb", "sha256:")).toThrow("not a sha256 digest");
  });

  it("a space or instance that would escape the subject is refused", () => {
    expect(() => xferFilter("te.am", "hostb")).toThrow(InvalidTokenError);
    expect(() => xferFilter("team", "host>")).toThrow(InvalidTokenError);
  });

  it("reads a chunk's index back, and nothing from a subject that does not end in one", () => {
    expect(xferChunkIndex(xferChunkSubject("team", "hostb", digest, 0))).toBe(0);
    expect(xferChunkIndex(xferChunkSubject("team", "hostb", digest, 255))).toBe(255);
    expect(xferChunkIndex(`cotal.team.xfer.hostb.${hex}.999999999`)).toBe(999_999_999);
    expect(xferChunkIndex(`cotal.team.xfer.hostb.${hex}.1000000000`)).toBeUndefined();
    expect(xferChunkIndex(`cotal.team.xfer.hostb.${hex}.07`)).toBeUndefined();
    expect(xferChunkIndex(`cotal.team.xfer.hostb.${hex}.*`)).toBeUndefined();
    expect(xferChunkIndex("cotal.team.xfer.hostb")).toBeUndefined();
  });
});

describe("sizes", () => {
  it("a chunk and its overhead fill a server's default 1 MiB payload exactly", () => {
    expect(CARRY_CHUNK_BYTES + CARRY_CHUNK_OVERHEAD).toBe(1024 * 1024);
    expect(CARRY_MAX_BYTES).toBe(256 * 1024 * 1024);
  });

  it("a transfer larger than the most a manager takes is refused before a byte is sent", () => {
    const begin = XFER_COMMANDS["xfer-begin"].args;
    expect(begin.safeParse({ instance: "hostb", digest, size: CARRY_MAX_BYTES }).success).toBe(true);
    expect(begin.safeParse({ instance: "hostb", digest, size: CARRY_MAX_BYTES + 1 }).success).toBe(false);
    expect(begin.safeParse({ instance: "host b", digest, size: 1 }).success).toBe(false);
    const carry = CARRY_COMMANDS["carry-begin"].args;
    expect(carry.safeParse({ session, digest, size: CARRY_MAX_BYTES + 1 }).success).toBe(false);
    expect(carry.safeParse({ session, digest, size: -1 }).success).toBe(false);
  });
});

describe("ids and claims", () => {
  it("a session id is a lowercase UUID; a title is not one, and the error says so", () => {
    expect(SessionId.safeParse(session).success).toBe(true);
    const titled = SessionId.safeParse("fix the login bug");
    expect(titled.error?.issues[0]?.message).toBe("a session id is a UUID such as 0b6c…-…; a title or name is not an id");
    expect(SessionId.safeParse(session.toUpperCase()).success).toBe(false);
  });

  it("a claim is 32 lowercase hex characters", () => {
    expect(CarryClaim.safeParse("a".repeat(32)).success).toBe(true);
    expect(CarryClaim.safeParse("a".repeat(31)).success).toBe(false);
    expect(CarryClaim.safeParse("A".repeat(32)).error?.issues[0]?.message).toBe("a claim is 32 lowercase hex characters");
  });

  it("carry-begin answers either a claim for bytes already staged or the stream to upload into", () => {
    const reply = CARRY_COMMANDS["carry-begin"].reply;
    expect(reply.safeParse({ known: false, stream: "XFER_team_hostb" }).success).toBe(true);
    expect(reply.safeParse({ known: true, claim: "a".repeat(32), session, digest, size: 1, expiresAt: 5 }).success).toBe(true);
    expect(reply.safeParse({ known: true, stream: "XFER_team_hostb" }).success).toBe(false);
  });
});
