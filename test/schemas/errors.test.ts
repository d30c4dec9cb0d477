// Errors of the contract: each has its code and a remedy that says how to fix it.
import { describe, expect, it } from "vitest";
import { CotalError, InvalidTokenError, PayloadTooLargeError, ValidationError } from "../../schemas/index.js";

describe("errors", () => {
  it("a CotalError carries code, remedy (appended to the message) and cause", () => {
    const cause = new Error("root");
    const e = new CotalError("some-code", "It broke.", { remedy: "Fix it.", cause });
    expect(e).toMatchObject({ code: "some-code", remedy: "Fix it.", message: "It broke. Fix it.", name: "CotalError" });
    expect(e.cause).toBe(cause);
    expect(new CotalError("c", "Plain.")).toMatchObject({ message: "Plain.", remedy: undefined });
  });
  it("InvalidTokenError names the token, the alphabet and the remedy", () => {
    const e = new InvalidTokenError("role", "a.b", "letters");
    expect(e).toMatchObject({ code: "invalid-token", name: "InvalidTokenError", what: "role", token: "a.b", alphabet: "letters" });
    expect(e.message).toBe('Invalid role "a.b": it must be non-empty and use only letters. Choose a role made of letters; names are refused, never rewritten.');
  });
  it("ValidationError lists the issues; PayloadTooLargeError names size and limit", () => {
    expect(new ValidationError("args", ["a: bad", "b: worse"]).message).toBe("Invalid args: a: bad; b: worse.");
    expect(new ValidationError("args", ["x"]).code).toBe("invalid-input");
    const p = new PayloadTooLargeError(10, 5);
    expect(p.message).toMatch(/^Message is 10 bytes, over the limit of 5 bytes\. Send less text/);
  });
});
