// The logs of the processes `cotal up` starts have a size bound: the node services write theirs
// through BoundedLogFile (copy and truncate), nats-server rotates its own (log_file,
// logfile_size_limit, logfile_max_num), and `cotal logs --follow` reads on across both kinds of
// rotation (LogTail). Real files, a real nats-server.
import { spawn } from "node:child_process";
import { appendFileSync, closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { findNatsServer } from "../../../broker/index.js";
import { BoundedLogFile, LOG_BOUNDS } from "../../../cli/mesh-host/bounded-log.js";
import { LogTail } from "../../../cli/mesh-host/log-tail.js";
import { renderServerConfig } from "../../../cli/mesh-host/nats-process.js";
import { DEFAULT_SYNC } from "../../../cli/mesh-host/sync-interval.js";
import { until } from "../../../testbed/until.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "cotal-logs-"));
  dirs.push(d);
  return d;
}
const line = (i: number) => `{"level":40,"msg":"line ${String(i).padStart(5, "0")}"}\n`;

describe("a bounded log file", () => {
  it("rotates past its size: never more than keep+1 files, none over the bound, the newest lines whole and in order", () => {
    const file = join(tempDir(), "mesh-service.log");
    const log = new BoundedLogFile(file, { maxBytes: 1_000, keep: 2 });
    for (let i = 0; i < 500; i++) log.write(line(i));
    log.close();
    expect(readdirSync(join(file, "..")).sort()).toEqual(["mesh-service.log", "mesh-service.log.1", "mesh-service.log.2"]);
    for (const f of [file, `${file}.1`, `${file}.2`]) expect(statSync(f).size).toBeLessThanOrEqual(1_000);
    const kept = [`${file}.2`, `${file}.1`, file].map((f) => readFileSync(f, "utf8")).join("");
    const lines = kept.split("\n").filter(Boolean);
    expect(lines.at(-1)).toBe(line(499).trim());
    const first = Number(/line (\d+)/.exec(lines[0]!)![1]);
    expect(lines).toEqual(Array.from({ length: 500 - first }, (_, k) => line(first + k).trim()));
  });

  it("keeps another writer of the same file (the process's own stderr, opened to append) inside the bound", () => {
    const file = join(tempDir(), "manager.log");
    const stderr = openSync(file, "a"); // what `cotal up` hands the process as its stdout and stderr
    const log = new BoundedLogFile(file, { maxBytes: 2_000, keep: 1 });
    for (let i = 0; i < 300; i++) {
      log.write(line(i));
      if (i % 10 === 0) writeSync(stderr, `stderr ${i}\n`);
    }
    log.close();
    closeSync(stderr);
    // Appends land at the truncated file's end, never past the bound plus what came after the last rotation.
    expect(statSync(file).size).toBeLessThanOrEqual(2_000 + 100);
    expect(readFileSync(file, "utf8")).toContain("stderr 290");
    expect(existsSync(`${file}.2`)).toBe(false);
  });

  it("the bound `cotal up` uses: 10 MiB a file, the current one and 4 rotated", () => {
    expect(LOG_BOUNDS).toEqual({ maxBytes: 10 * 1024 * 1024, keep: 4 });
  });
});

describe("following a log across rotations", () => {
  it("reads every line of a file truncated in place after a copy (the node services' rotation)", () => {
    const file = join(tempDir(), "mesh-service.log");
    const log = new BoundedLogFile(file, { maxBytes: 1_000, keep: 2 });
    const tail = new LogTail(file);
    let seen = "";
    for (let i = 0; i < 400; i++) {
      log.write(line(i));
      if (i % 7 === 0) seen += tail.read(); // at most one rotation between two reads
    }
    seen += tail.read();
    tail.close();
    log.close();
    expect(seen).toBe(Array.from({ length: 400 }, (_, i) => line(i)).join(""));
  });

  it("reads every line of a file renamed away and started anew (nats-server's rotation)", () => {
    const file = join(tempDir(), "nats-server.log");
    const tail = new LogTail(file);
    let seen = tail.read(); // not there yet
    for (let i = 0; i < 90; i++) {
      appendFileSync(file, line(i));
      if (i % 30 === 29) {
        appendFileSync(file, line(1000 + i)); // written after the last read, before the rename
        renameSync(file, `${file}.2026.12.07.${i}`);
      }
      if (i % 4 === 0) seen += tail.read();
    }
    seen += tail.read();
    tail.close();
    const expected = Array.from({ length: 90 }, (_, i) => line(i) + (i % 30 === 29 ? line(1000 + i) : "")).join("");
    expect(seen).toBe(expected);
  });
});

describe("nats-server's own log", () => {
  it("is configured to a file with a size limit and a number of files, and nats-server starts with it", async () => {
    const dir = tempDir();
    const logFile = join(dir, "nats-server.log");
    const conf = renderServerConfig({ host: "127.0.0.1", port: "auto", storeDir: join(dir, "js"), portsDir: dir, space: "logs", sync: DEFAULT_SYNC, logFile });
    expect(conf).toContain(`log_file: ${JSON.stringify(logFile)}`);
    expect(conf).toContain(`logfile_size_limit: ${LOG_BOUNDS.maxBytes}`);
    expect(conf).toContain(`logfile_max_num: ${LOG_BOUNDS.keep + 1}`);
    const confFile = join(dir, "nats-server.conf");
    appendFileSync(confFile, conf);
    let out = "";
    const child = spawn(findNatsServer(), ["-c", confFile], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    try {
      await until(
        () => existsSync(logFile) && readFileSync(logFile, "utf8").includes("Server is ready"),
        10_000,
        `nats-server logging to its file (it printed: ${out})`,
      );
      expect(out).toBe(""); // nothing on stderr: the log went to the file
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
  });
});
