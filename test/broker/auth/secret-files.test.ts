// Secrets written without touching the user's folder: the file 0600, folders made on the way 0700,
// an existing folder's mode left alone.
import { chmodSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeSecret } from "../../../broker/internal.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cotal-harden-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("secret files", () => {
  it("writing into an existing folder leaves its mode (even 1777 with the sticky bit) alone; the file is 0600", () => {
    const shared = join(dir, "shared");
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    writeSecret(join(shared, "a.creds"), "secret");
    expect((statSync(shared).mode & 0o7777).toString(8)).toBe("1777");
    expect((statSync(join(shared, "a.creds")).mode & 0o777).toString(8)).toBe("600");
    expect(readFileSync(join(shared, "a.creds"), "utf8")).toBe("secret");
    // replacing it is atomic and keeps 0600
    writeSecret(join(shared, "a.creds"), "newer");
    expect(readFileSync(join(shared, "a.creds"), "utf8")).toBe("newer");
    expect((statSync(join(shared, "a.creds")).mode & 0o777).toString(8)).toBe("600");
  });

  it("folders it creates on the way are 0700", () => {
    const file = join(dir, "made", "deeper", "b.creds");
    writeSecret(file, "x");
    expect((statSync(join(dir, "made")).mode & 0o777).toString(8)).toBe("700");
    expect((statSync(join(dir, "made", "deeper")).mode & 0o777).toString(8)).toBe("700");
  });
});
