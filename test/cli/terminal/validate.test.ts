// Flag validation names each bad flag, what it got and what it accepts; errors map to exit codes.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { exitCodeOf, UsageError } from "../../../cli/terminal/errors.js";
import { actorName, duration, parseInput, port } from "../../../cli/terminal/validate.js";
import { InvalidTokenError } from "../../../schemas/index.js";
import { AuthenticationRefusedError, MeshServiceUnavailableError, MeshUnavailableError, PermissionDeniedError } from "../../../broker/index.js";

describe("flag validation", () => {
  const schema = z.object({ as: actorName("--as name").optional(), port: port.optional(), since: duration.optional() });

  it("names each bad flag, what it got and what it accepts", () => {
    let err: unknown;
    try {
      parseInput(schema, { as: "a.b", port: "70000", since: "soon" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    const msg = (err as Error).message;
    expect(msg).toContain(`--as: --as name must use only letters, digits and '_' (got "a.b")`);
    expect(msg).toContain(`--port: port must be from 1 to 65535 (got "70000")`);
    expect(msg).toContain(`--since: use a number and a unit such as 30s`);
    expect(parseInput(schema, { port: "4333", since: "90s" })).toEqual({ port: 4333, since: 90_000 });
  });

  it("maps errors to exit codes: 2 bad input, 3 unreachable, 4 credential refused, 5 not permitted, 6 mesh service silent, 1 otherwise", () => {
    expect(exitCodeOf(new UsageError("x"))).toBe(2);
    expect(exitCodeOf(new InvalidTokenError("actor name", "a.b", "letters"))).toBe(2);
    expect(exitCodeOf(new MeshUnavailableError("nats://x:1", new Error("refused")))).toBe(3);
    expect(exitCodeOf(new AuthenticationRefusedError("nats://x:1", "expired", new Error("Authorization Violation")))).toBe(4);
    expect(exitCodeOf(new PermissionDeniedError("publish", "cotal.s.chat.x"))).toBe(5);
    expect(exitCodeOf(new MeshServiceUnavailableError("ping", new Error("timeout")))).toBe(6);
    expect(exitCodeOf(new Error("boom"))).toBe(1);
  });
});
