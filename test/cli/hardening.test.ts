// The CLI's hardening without a broker: terminal-safe text and JSON, credential
// files checked before connecting, secrets written without touching the user's folder, the
// environment background processes get, pid files that are unreadable, and the store lock.
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fmtCreds, encodeUser } from "@nats-io/jwt";
import { createAccount, createUser } from "@nats-io/nkeys";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credsProblem, InsecureSecretError, InvalidCredsError, readCredsFile, writeSecret } from "../../broker/internal.js";
import { childEnv } from "../../cli/child-env.js";
import { exitCodeOf } from "../../cli/errors.js";
import { claimStore, releaseStaleStore, StoreInUseError, storeLockFile, storeLockHolder } from "../../cli/lock.js";
import { oneLine, safeLines, terminalSafeJson } from "../../cli/output.js";
import { readRecordFile, recordOf } from "../../cli/pid-file.js";
import { until } from "../harness/until.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cotal-harden-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Every character a terminal must never get raw from a peer. */
const HOSTILE = "a\u202eb\u2028c\u2029d\u0085e\u007ff\u009bg\u001b[31mh\u200fi\u2066j\u061ck\u0000l";
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe("terminal output", () => {
  it("peer text shows bidi overrides, line separators, C0/C1 controls and DEL as \\u escapes, on one line", () => {
    const line = oneLine(HOSTILE + "\nnext");
    expect(line).not.toMatch(RAW);
    expect(line).not.toContain("\n");
    expect(line).toBe("a\\u202eb\\u2028c\\u2029d\\u0085e\\u007ff\\u009bg\\u001b[31mh\\u200fi\\u2066j\\u061ck\\u0000l\\nnext");
    expect(oneLine(line)).toBe(line); // framing twice changes nothing
    expect(oneLine("emoji 👩‍💻 and accents é stay")).toBe("emoji 👩‍💻 and accents é stay");
    expect(safeLines("first\u202e\nsecond")).toBe("first\\u202e\nsecond");
  });

  it("--json escapes DEL, C1, line separators and bidi controls, and parses back to the same text", () => {
    const value = { text: HOSTILE, nested: [{ name: "x\u007f" }] };
    for (const json of [terminalSafeJson(value), terminalSafeJson(value, 2)]) {
      expect(json).not.toMatch(RAW);
      expect(json).toContain("\\u007f");
      expect(json).toContain("\\u0085");
      expect(json).toContain("\\u202e");
      expect(JSON.parse(json)).toEqual(value);
    }
  });
});

async function userCreds(): Promise<string> {
  const account = createAccount();
  const user = createUser();
  const jwt = await encodeUser("alice", user, account);
  return new TextDecoder().decode(fmtCreds(jwt, user));
}

describe("credential files", () => {
  it("a real NATS user credential passes; garbage, a JWT without its seed, or someone else's seed is named as not a credential", async () => {
    const good = await userCreds();
    expect(credsProblem(new TextEncoder().encode(good))).toBeUndefined();
    expect(credsProblem(new TextEncoder().encode("hello"))).toMatch(/no NATS USER JWT/);
    expect(credsProblem(new TextEncoder().encode(good.replace(/^SU[A-Z2-7]+$/m, "SUNOTASEED")))).toMatch(/seed is malformed/);
    const other = await userCreds();
    const swapped = good.replace(/-----BEGIN USER NKEY SEED-----[\s\S]*$/, other.slice(other.indexOf("-----BEGIN USER NKEY SEED-----")));
    expect(credsProblem(new TextEncoder().encode(swapped))).toMatch(/does not belong/);
  });

  it("a credential other users could read is refused with the chmod that fixes it; garbage names the file; both are bad input (exit 2)", async () => {
    const file = join(dir, "wide.creds");
    writeFileSync(file, await userCreds(), { mode: 0o644 });
    chmodSync(file, 0o644);
    let err: unknown;
    try {
      readCredsFile(file);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InsecureSecretError);
    expect((err as Error).message).toContain(file);
    expect((err as InsecureSecretError).remedy).toContain(`chmod 600 ${file}`);
    expect(exitCodeOf(err)).toBe(2);
    chmodSync(file, 0o600);
    expect(readCredsFile(file).length).toBeGreaterThan(0);

    const junk = join(dir, "junk.creds");
    writeFileSync(junk, "not a credential\n", { mode: 0o600 });
    expect(() => readCredsFile(junk)).toThrow(InvalidCredsError);
    expect(() => readCredsFile(junk)).toThrow(`The credential file ${junk} is not a valid NATS credential`);
    expect(exitCodeOf(new InvalidCredsError(junk, "x"))).toBe(2);
  });
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

describe("background process environment", () => {
  it("passes the allow-list (PATH, HOME, locale, TZ, NATS_SERVER_BIN, log settings) and nothing else", () => {
    const env = childEnv(
      { COTAL_LOG_LEVEL: "info" },
      {
        PATH: "/bin",
        HOME: "/home/x",
        LANG: "C.UTF-8",
        LC_ALL: "C",
        TZ: "UTC",
        NATS_SERVER_BIN: "/x/nats-server",
        COTAL_LOG_FORMAT: "json",
        AWS_SECRET_ACCESS_KEY: "s3cr3t",
        GITHUB_TOKEN: "t",
        COTAL_CREDS: "/home/x/alice.creds",
        COTAL_SERVER: "nats://elsewhere:4222",
        NODE_OPTIONS: "--require /tmp/evil.js",
      },
    );
    expect(env).toEqual({
      PATH: "/bin",
      HOME: "/home/x",
      LANG: "C.UTF-8",
      LC_ALL: "C",
      TZ: "UTC",
      NATS_SERVER_BIN: "/x/nats-server",
      COTAL_LOG_FORMAT: "json",
      COTAL_LOG_LEVEL: "info",
    });
  });
});

describe("pid files and the store lock", () => {
  it("an unreadable pid file is reported as unreadable, not as absent", () => {
    const file = join(dir, "svc.json");
    expect(readRecordFile(file).kind).toBe("absent");
    writeFileSync(file, "{garbage");
    expect(readRecordFile(file)).toMatchObject({ kind: "invalid", reason: "it is not JSON" });
    writeFileSync(file, JSON.stringify({ pid: -1 }));
    expect(readRecordFile(file).kind).toBe("invalid");
    writeFileSync(file, JSON.stringify(recordOf(process.pid, ["node"])));
    expect(readRecordFile(file).kind).toBe("ok");
  });

  it("a store held by a live server is refused; a lock whose process is gone is taken over", async () => {
    const store = join(dir, "store");
    mkdirSync(store);
    const claim = claimStore(store, "/proj/.cotal");
    const child = spawn("sleep", ["30"], { stdio: "ignore" });
    try {
      claim.handTo(recordOf(child.pid!, ["/usr/sbin/nats-server", "-c", "x"]));
      expect(storeLockHolder(store)).toMatchObject({ pid: child.pid, meshRoot: "/proj/.cotal" });
      expect(() => claimStore(store, "/other/.cotal")).toThrow(StoreInUseError);
      child.kill("SIGKILL");
      await until(() => storeLockHolder(store) === undefined, 5_000, "the lock to go stale once its process died");
      const again = claimStore(store, "/other/.cotal"); // taken over
      expect(storeLockHolder(store)).toMatchObject({ pid: process.pid, meshRoot: "/other/.cotal" });
      again.release();
      expect(() => statSync(storeLockFile(store))).toThrow();
      releaseStaleStore(store); // nothing to do, no error
    } finally {
      child.kill("SIGKILL");
    }
  });
});
