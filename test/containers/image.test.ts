// deploy/container's image, built (FROM scratch, by deploy/container/assemble.mjs) and started as
// a host of its own: its manager reaches the mesh's nats-server (another container) over the
// test's docker network, reports in `cotal ps`, runs as a non-root user, and starts an echo seat
// there that answers a DM. The mesh service and the CLI run on this machine, through the
// server's port published on 127.0.0.1.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, CotalProcess, runCotal, type CliResult } from "../harness/cli.js";
import { SERVICE_NODE_FLAGS } from "../../cli/mesh-host/service-process.js";
import {
  docker,
  dockerUnavailable,
  ensureImage,
  logsOf,
  LoopbackContainer,
  Network,
  natsUrl,
  startNatsContainer,
  Wait,
  warnSkipped,
  type StartedNetwork,
  type StartedTestContainer,
} from "../harness/containers.js";
import { until } from "../../testbed/until.js";

const skip = await dockerUnavailable();
if (skip) warnSkipped("test/containers/image.test.ts", skip);

const SPACE = "box";
let network: StartedNetwork | undefined;
let hub: StartedTestContainer | undefined;
let host: StartedTestContainer | undefined;
let service: CotalProcess | undefined;
let dir: string;
let server: string;

const cotal = (...args: string[]) => runCotal([...args, "--server", server, "--space", SPACE], { cwd: dir, env: cleanEnv(), timeoutMs: 60_000 });
function ok(r: CliResult): CliResult {
  expect(r.code, `exit code; stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

describe.skipIf(skip !== undefined)("deploy/container image", () => {
  beforeAll(async () => {
    await buildCli();
    dir = await mkdtemp(join(tmpdir(), "cotal-image-"));
    const [, tag] = await Promise.all([ensureImage("nats"), ensureImage("cotal")]);
    network = await new Network().start();
    hub = await startNatsContainer({ network, alias: "hub", config: 'server_name: hub\nlisten: "0.0.0.0:4222"\njetstream { store_dir: "/data" }\n' });
    server = natsUrl(hub);
    service = CotalProcess.spawn(["mesh", "serve", "--server", server, "--space", SPACE], { cwd: dir, env: cleanEnv({ COTAL_LOG_LEVEL: "warn" }) });
    await until(async () => (await cotal("roster", "--json")).code === 0, 30_000, `the mesh service to answer; its stderr: ${service.stderr}`);
    host = await new LoopbackContainer(tag)
      .withNetwork(network)
      .withNetworkAliases("boxa")
      .withName(`cotal-test-boxa-${process.pid}`)
      .withEnvironment({ COTAL_SERVER: "nats://hub:4222", COTAL_SPACE: SPACE, COTAL_LOG_LEVEL: "info" })
      .withCommand(["manager", "--instance", "boxa", "--stop-seats"])
      .withWaitStrategy(Wait.forLogMessage(/manager running/))
      .withStartupTimeout(60_000)
      .start();
  }, 180_000);

  afterAll(async () => {
    await host?.stop({ timeout: 10_000 }).catch(() => undefined);
    await service?.stop("SIGTERM").catch(() => undefined);
    await hub?.stop().catch(() => undefined);
    await network?.stop().catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("runs as a non-root user and its manager reports in cotal ps", async () => {
    expect((await docker(["inspect", "--format", "{{.Config.User}}", host!.getId()])).trim()).toBe("10001:10001");
    // The manager process itself (pid 1 is the entrypoint; its child is `cotal manager`), from the
    // services' bundle with their flags, as `cotal up` starts it.
    const top = await docker(["top", host!.getId(), "-o", "pid,uid,args"]);
    expect(top).toContain(`/usr/local/bin/node ${SERVICE_NODE_FLAGS.join(" ")} /opt/cotal/dist/cotal-service.mjs manager`);
    expect(top).toMatch(/\d+\s+10001\s+\/usr\/local\/bin\/node .*\/opt\/cotal\/dist\/cotal-service\.mjs manager/);
    expect(top).not.toMatch(/^\s*\d+\s+0\s/m);
    await until(async () => (await cotal("ps", "--json")).stdout.includes('"boxa"'), 20_000, `boxa in cotal ps; its logs: ${await logsOf(host!)}`);
  }, 60_000);

  it("starts an echo seat inside the container that answers a DM from this machine", async () => {
    const spawned = ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "parrot", "--on", "boxa", "--json"));
    expect(spawned.json()).toMatchObject({ name: "parrot", instance: "boxa", outcome: "started" });
    const top = await docker(["top", host!.getId(), "-o", "pid,uid,args"]);
    // Its own small bundle, not the CLI's `agent echo` (the image carries it beside the others).
    expect(top).toMatch(/\d+\s+10001\s+\/usr\/local\/bin\/node .*\/opt\/cotal\/dist\/echo-seat\.mjs/);
    const listen = CotalProcess.spawn(["listen", "--as", "carol", "--json", "--server", server, "--space", SPACE], { cwd: dir, env: cleanEnv() });
    try {
      await listen.waitForJson((l: { type?: string }) => l.type === "ready", 20_000, "listen ready");
      ok(await cotal("send", "dm", "parrot", "polly?", "--as", "carol"));
      await listen.waitForJson((l: { type?: string; text?: string }) => l.type === "message" && l.text === "echo: polly?", 20_000, "the echo reply");
    } finally {
      await listen.stop();
    }
    ok(await cotal("stop", "--name", "parrot"));
  }, 90_000);
});
