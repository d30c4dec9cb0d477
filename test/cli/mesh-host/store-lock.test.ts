// Pid files that cannot be read, and the store lock: one server per store, a stale lock taken over.
import { spawn } from "node:child_process";
import { mkdirSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimStore, releaseStaleStore, StoreInUseError, storeLockFile, storeLockHolder } from "../../../cli/mesh-host/lock.js";
import { readRecordFile, recordOf } from "../../../cli/mesh-host/pid-file.js";
import { until } from "../../../testbed/until.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cotal-harden-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
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
