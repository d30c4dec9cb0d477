// Real hosts for the multi-host tests: containers of locally built images, run with testcontainers
// 11 (12 needs Node 22) against the machine's dockerd. No image registry is reachable here, so
// both images are FROM scratch, assembled from this machine's node and nats-server by
// deploy/container/assemble.mjs (the script users run too) and tagged by a hash of their
// content: test files share one build, and a rebuild happens only when a byte changed.
import { execFile } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, statSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { StartedNetwork, StartedTestContainer } from "testcontainers";
import { z } from "zod";
import { ensureBuilt, projectRoot } from "./build.js";
import { until } from "../../testbed/until.js";
import { findNatsServer } from "../../testbed/nats-server.js";

// The reaper (ryuk) is an image from a registry: off, so tests stop what they start themselves.
// testcontainers would hand out the docker bridge's address; tests reach containers on loopback.
process.env.TESTCONTAINERS_RYUK_DISABLED ??= "true";
process.env.TESTCONTAINERS_HOST_OVERRIDE ??= "127.0.0.1";

const tc = await import("testcontainers");
export const { GenericContainer, Network, Wait } = tc;
export type { StartedNetwork, StartedTestContainer } from "testcontainers";

const run = promisify(execFile);

/** Run the docker CLI; stdout, or a typed error quoting stderr. */
export async function docker(args: string[], timeoutMs = 120_000): Promise<string> {
  try {
    const { stdout } = await run("docker", args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (cause) {
    const stderr = (cause as { stderr?: string }).stderr ?? "";
    throw new DockerCommandError(args, stderr.trim() || (cause as Error).message);
  }
}

export class DockerCommandError extends Error {
  constructor(
    readonly args: string[],
    readonly stderr: string,
  ) {
    super(`docker ${args.join(" ")} failed: ${stderr}`);
    this.name = "DockerCommandError";
  }
}

let availability: Promise<string | undefined> | undefined;

/**
 * Why the container tests cannot run here (no docker CLI, no daemon answering), or undefined
 * when they can. Checked once per test process. `.ci/run` starts dockerd when it can; when it
 * cannot, the container tests skip with this reason printed loudly, and the rest of the suite runs.
 */
export function dockerUnavailable(): Promise<string | undefined> {
  availability ??= (async () => {
    if (process.env.COTAL_SKIP_CONTAINERS) return `COTAL_SKIP_CONTAINERS is set (${process.env.COTAL_SKIP_CONTAINERS})`;
    try {
      await docker(["info", "--format", "{{.ServerVersion}}"], 15_000);
      return undefined;
    } catch (err) {
      return err instanceof DockerCommandError ? `docker does not answer: ${err.stderr.split("\n")[0]}` : `docker is not installed: ${(err as Error).message}`;
    }
  })();
  return availability;
}

/** Print why container tests are skipped, so a green run never hides that they did not run. */
export function warnSkipped(file: string, reason: string): void {
  console.warn(`\n*** CONTAINER TESTS SKIPPED (${file}): ${reason}\n*** Start dockerd (see docs/testing.md, "Container tests") to run them.\n`);
}

const Assembled = z.object({ dir: z.string(), image: z.enum(["cotal", "nats"]), hash: z.string().regex(/^[0-9a-f]{16}$/) });
export type ImageKind = z.infer<typeof Assembled>["image"];

/** Serialize builds of one tag across test processes (vitest runs files in parallel workers). */
async function withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const lock = join(tmpdir(), `cotal-image-${name}.lock`);
  await until(
    () => {
      try {
        closeSync(openSync(lock, "wx"));
        return true;
      } catch {
        // A lock left by a killed process is older than any build takes.
        try {
          if (Date.now() - statSync(lock).mtimeMs > 10 * 60_000) unlinkSync(lock);
        } catch {
          /* gone meanwhile */
        }
        return false;
      }
    },
    10 * 60_000,
    `the image build lock ${lock}`,
    200,
  );
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

const images = new Map<ImageKind, Promise<string>>();

/**
 * Remove this kind's images built from older bytes: with vfs every image is a full copy on disk
 * (the cotal image is 123 MB), and each change to the bundles makes a new one. An image a running
 * container still uses is refused by docker and kept.
 */
async function pruneOlder(kind: ImageKind, keep: string): Promise<void> {
  const tags = (await docker(["image", "ls", "--format", "{{.Repository}}:{{.Tag}}", `cotal-test/${kind}`])).split("\n").filter(Boolean);
  for (const t of tags) if (t !== keep) await docker(["image", "rm", t]).catch(() => undefined);
}

/**
 * The tag of a locally built image (`cotal-test/<kind>:<content hash>`), building it only when no
 * image with that tag exists. `cotal` needs the bundles, so they are built first when stale.
 */
export function ensureImage(kind: ImageKind): Promise<string> {
  let p = images.get(kind);
  if (!p) {
    p = (async () => {
      if (kind === "cotal") ensureBuilt();
      const dir = mkdtempSync(join(tmpdir(), `cotal-image-${kind}-`));
      try {
        const { stdout } = await run(
          process.execPath,
          [join(projectRoot, "deploy/container/assemble.mjs"), dir, "--image", kind, "--nats-server", findNatsServer()],
          { maxBuffer: 1024 * 1024 },
        );
        const a = Assembled.parse(JSON.parse(stdout.trim().split("\n").at(-1) ?? ""));
        const tag = `cotal-test/${kind}:${a.hash}`;
        await withLock(`${kind}-${a.hash}`, async () => {
          const exists = await docker(["image", "inspect", "--format", "{{.Id}}", tag]).then(
            () => true,
            () => false,
          );
          if (!exists) {
            await docker(["build", "--quiet", "--tag", tag, dir], 10 * 60_000);
            await pruneOlder(kind, tag);
          }
        });
        return tag;
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    })();
    images.set(kind, p);
  }
  return p;
}

/**
 * A container whose exposed ports are published on 127.0.0.1 only (testcontainers 11 binds every
 * interface): tests reach containers over loopback, and nothing is offered to the LAN.
 */
export class LoopbackContainer extends GenericContainer {
  withLoopbackPorts(...ports: number[]): this {
    this.withExposedPorts(...ports);
    const bindings = this.hostConfig.PortBindings as Record<string, { HostIp?: string; HostPort?: string }[]> | undefined;
    for (const list of Object.values(bindings ?? {})) for (const b of list) b.HostIp = "127.0.0.1";
    return this;
  }
}

/** A nats-server container of the `nats` image on `network` under `alias`, client port published. */
export async function startNatsContainer(opts: {
  network: StartedNetwork;
  alias: string;
  /** nats-server config text, written to /etc/nats/nats.conf. */
  config: string;
  /** Extra files: path inside the container → content. */
  files?: Record<string, string>;
}): Promise<StartedTestContainer> {
  const tag = await ensureImage("nats");
  const files = Object.entries({ "/etc/nats/nats.conf": opts.config, ...opts.files }).map(([target, content]) => ({ content, target, mode: 0o644 }));
  return (
    new LoopbackContainer(tag)
      .withNetwork(opts.network)
      .withNetworkAliases(opts.alias)
      .withName(`cotal-test-${opts.alias}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`)
      .withCopyContentToContainer(files)
      .withCommand(["-c", "/etc/nats/nats.conf"])
      .withLoopbackPorts(4222)
      // The default wait probes the port from a shell inside the container; a scratch image has none.
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .withStartupTimeout(60_000)
      .start()
  );
}

/** The nats:// URL of a started container's published client port, on loopback. */
export function natsUrl(c: StartedTestContainer, port = 4222): string {
  return `nats://127.0.0.1:${c.getMappedPort(port)}`;
}

/** Everything a container printed so far (both streams), for failure messages. */
export async function logsOf(c: StartedTestContainer): Promise<string> {
  // `docker logs` replays the container's stderr on its own stderr: keep both.
  try {
    const { stdout, stderr } = await run("docker", ["logs", "--tail", "300", c.getId()], { maxBuffer: 16 * 1024 * 1024 });
    return stdout + stderr;
  } catch (err) {
    return `(no logs: ${(err as Error).message})`;
  }
}

/** Cut a container off `network` (the partition), and join it again under its alias. */
export async function disconnect(network: StartedNetwork, c: StartedTestContainer): Promise<void> {
  await docker(["network", "disconnect", "--force", network.getName(), c.getId()]);
}
export async function reconnect(network: StartedNetwork, c: StartedTestContainer, alias: string): Promise<void> {
  await docker(["network", "connect", "--alias", alias, network.getName(), c.getId()]);
}
