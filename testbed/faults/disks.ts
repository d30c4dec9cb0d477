// Small disks for the cluster's stores: each node's store (or, with the power layer, what backs it)
// is a tmpfs of a few MiB, so a disk-full fault can fill it: a filler file takes every free byte,
// and healing removes it.
import { execFile } from "node:child_process";
import { mkdirSync, openSync, closeSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export class SmallDisks {
  private readonly mounted: string[] = [];

  private constructor(private readonly dir: string) {}

  /** Mount one tmpfs of `sizeMiB` per node under `dir`. */
  static async mount(dir: string, nodes: readonly string[], sizeMiB: number): Promise<SmallDisks> {
    const d = new SmallDisks(dir);
    try {
      for (const n of nodes) {
        mkdirSync(d.path(n), { recursive: true });
        await run("mount", ["-t", "tmpfs", "-o", `size=${sizeMiB}M,mode=0700`, "tmpfs", d.path(n)]);
        d.mounted.push(d.path(n));
      }
    } catch (err) {
      await d.unmount();
      throw err;
    }
    return d;
  }

  /** The node's disk (a directory on its tmpfs). */
  path(node: string): string {
    return join(this.dir, `disk-${node}`);
  }

  /** Take every free byte of the node's disk with a filler file. */
  fill(node: string): void {
    const fd = openSync(join(this.path(node), "filler"), "w");
    const chunk = Buffer.alloc(64 * 1024);
    try {
      for (;;) writeSync(fd, chunk);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
    } finally {
      closeSync(fd);
    }
  }

  /** Remove the filler. */
  free(node: string): void {
    rmSync(join(this.path(node), "filler"), { force: true });
  }

  /** Unmount every disk (lazily: a process may still hold a file). */
  async unmount(): Promise<void> {
    for (const m of this.mounted.splice(0)) await run("umount", ["-l", m]).catch(() => undefined);
  }
}
