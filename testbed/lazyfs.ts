// Mounts testbed/lazyfs.py (a FUSE layer that keeps writes in memory until fsync) for power-loss
// tests: a store on the mount loses exactly what was never fsynced when cutPower() kills the layer.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { LogRing } from "./nats-server.js";
import { until } from "./until.js";

/** Debian's python3-fusepy is installed for this interpreter (the first python3 on PATH may lack it). */
export const LAZYFS_PYTHON = "/usr/bin/python3";
const SCRIPT = fileURLToPath(new URL("./lazyfs.py", import.meta.url));
const HOW_TO_GET = "install them with `apt-get install -y fuse3 python3-fusepy` (.ci/run does)";

/** The layer could not be mounted or unmounted; `logs` holds its last output. */
export class LazyFsError extends Error {
  override readonly name = "LazyFsError";
  constructor(
    message: string,
    readonly logs = "",
    options?: ErrorOptions,
  ) {
    super(logs ? `${message}\n--- lazyfs output ---\n${logs}` : message, options);
  }
}

/**
 * What this machine lacks to mount the layer, as a sentence naming the fix; undefined when
 * nothing is missing. Power-loss tests fail with it (or skip under COTAL_SKIP_POWER_LOSS).
 */
export function lazyFsMissing(): string | undefined {
  const missing: string[] = [];
  if (!existsSync("/dev/fuse")) missing.push("/dev/fuse (the fuse kernel module, or a container started with --device /dev/fuse)");
  if (spawnSync("fusermount3", ["-V"]).error) missing.push("fusermount3 (Debian package fuse3)");
  const fusepy = ["fusepy", "fuse"].some((m) => spawnSync(LAZYFS_PYTHON, ["-c", `import ${m}`]).status === 0);
  if (!fusepy) missing.push(`the fusepy module for ${LAZYFS_PYTHON} (Debian package python3-fusepy)`);
  return missing.length ? `power-loss tests need ${missing.join(", ")}: ${HOW_TO_GET}` : undefined;
}

/** A live mount of the layer over `mountDir`, backed by `backingDir`. */
export interface LazyMount {
  readonly backingDir: string;
  readonly mountDir: string;
  /**
   * Power loss: SIGKILL the layer (its unsynced writes die with its memory), then detach the
   * dead mount lazily. Afterwards `backingDir` holds only what was fsynced; mount it again to
   * "reboot". Stop whatever writes to the mount first (a crashed process), as power loss would.
   */
  cutPower(): Promise<void>;
  /**
   * Time passing: write every unsynced write back to `backingDir`, as a kernel does with dirty
   * pages about 30 s after they were written. Resolves once the layer has done it.
   */
  writeBack(): Promise<void>;
  /** Unmount (lazily if busy) and wait for the layer to exit; unsynced writes are dropped too. Safe to call twice. */
  unmount(): Promise<void>;
  /** The layer's last output lines (a Python traceback when an operation failed). */
  logs(): string;
}

// A test worker that exits without cleanup must not leave mounts behind.
const live = new Map<ChildProcess, string>();
let exitHookInstalled = false;
function track(child: ChildProcess, mountDir: string): void {
  live.set(child, mountDir);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const [c, dir] of live) {
      c.kill("SIGKILL");
      spawnSync("fusermount3", ["-uz", dir]);
    }
  });
}

/** True while /proc/mounts lists a fuse mount at `dir`. */
export function isFuseMounted(dir: string): boolean {
  const target = resolve(dir);
  return readFileSync("/proc/mounts", "utf8")
    .split("\n")
    .some((line) => {
      const [, at, type] = line.split(" ");
      return at === target && (type?.startsWith("fuse") ?? false);
    });
}

/** Mount the layer and wait until /proc/mounts shows it. Throws LazyFsError naming what failed. */
export async function mountLazyFs(backingDir: string, mountDir: string, opts: { timeoutMs?: number } = {}): Promise<LazyMount> {
  const missing = lazyFsMissing();
  if (missing) throw new LazyFsError(missing);
  const mountAt = resolve(mountDir);
  if (isFuseMounted(mountAt)) throw new LazyFsError(`${mountAt} is already a fuse mount (a previous run's? \`fusermount3 -uz ${mountAt}\`)`);
  const log = new LogRing(100, 32 * 1024);
  const child = spawn(LAZYFS_PYTHON, [SCRIPT, resolve(backingDir), mountAt], { stdio: ["ignore", "pipe", "pipe"] });
  track(child, mountAt);
  let exited = false;
  const exit = new Promise<void>((done) =>
    child.once("exit", () => {
      exited = true;
      live.delete(child);
      done();
    }),
  );
  let writtenBack = 0; // writebacks the layer has reported (one line each)
  for (const s of [child.stdout, child.stderr]) {
    s.setEncoding("utf8");
    s.on("data", (chunk: string) => {
      log.push(chunk);
      writtenBack += chunk.split("lazyfs: written back ").length - 1;
    });
  }
  try {
    await until(() => exited || isFuseMounted(mountAt), opts.timeoutMs ?? 10_000, `lazyfs to mount ${mountAt}`);
    if (exited) throw new Error(`lazyfs exited (code ${child.exitCode}) before ${mountAt} was mounted`);
  } catch (err) {
    child.kill("SIGKILL");
    await exit;
    detach(mountAt);
    throw new LazyFsError((err as Error).message, log.text(), { cause: err });
  }

  const gone = async (): Promise<void> => {
    await exit;
    await until(() => !isFuseMounted(mountAt), 10_000, `${mountAt} to leave /proc/mounts`);
  };
  return {
    backingDir,
    mountDir: mountAt,
    logs: () => log.text(),
    async cutPower() {
      if (exited) throw new LazyFsError(`lazyfs on ${mountAt} is not running: power was already cut or it crashed`, log.text());
      child.kill("SIGKILL");
      await exit;
      detach(mountAt);
      await gone();
    },
    async writeBack() {
      if (exited) throw new LazyFsError(`lazyfs on ${mountAt} is not running`, log.text());
      const want = writtenBack + 1;
      child.kill("SIGUSR1");
      // The layer writes back before its next operation: a stat of the mount is one.
      await until(
        async () => {
          await stat(mountAt);
          return writtenBack >= want;
        },
        10_000,
        `lazyfs on ${mountAt} to write back its unsynced writes`,
      );
    },
    async unmount() {
      if (!exited && spawnSync("fusermount3", ["-u", mountAt]).status !== 0) child.kill("SIGKILL");
      await exit;
      detach(mountAt);
      await gone();
    },
  };
}

/** Lazy unmount: detaches a mount even while files on it are open or its layer is dead. */
function detach(dir: string): void {
  if (isFuseMounted(dir)) spawnSync("fusermount3", ["-uz", dir]);
}
