// A remote host on the mesh over a leaf node, as docs/remote-hosts.md sets one up: the hub is a
// `cotal up` mesh on this machine (static mode) with a TLS leafnodes listener on the test
// network's gateway address; the remote host is its own container of the deploy/container image
// running a leaf nats-server (config rendered by deploy/leaf/render.mjs, TLS checked against the
// hub's CA) and a `cotal manager` on a minted manager credential. Its one outbound connection
// carries everything: `cotal spawn --on hostb` from the hub starts an echo seat there that
// answers a DM, and a seat on the leaf host (lucy, its own agent credential, checked by the leaf
// server) exchanges DMs and channel posts with a seat on the hub (hubert).

import { execFile, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, CotalProcess, freePort, projectRoot, runCotal, type CliResult } from "../harness/cli.js";
import {
  docker,
  dockerUnavailable,
  ensureImage,
  logsOf,
  LoopbackContainer,
  Network,
  Wait,
  warnSkipped,
  type StartedNetwork,
  type StartedTestContainer,
} from "../harness/containers.js";
import { until } from "../../testbed/until.js";

const skip = await dockerUnavailable();
if (skip) warnSkipped("test/containers/leaf.test.ts", skip);

const run = promisify(execFile);
const UID = 10001; // the image's `cotal` user
let network: StartedNetwork | undefined;
let host: StartedTestContainer | undefined;
let project: string;
let etc: string;
let hubert: CotalProcess | undefined;
let leafPort: number;
const procs: CotalProcess[] = [];
const execs: ChildProcess[] = [];

const cotal = (...args: string[]) => runCotal(args, { cwd: project, env: cleanEnv(), timeoutMs: 60_000 });
function ok(r: CliResult): CliResult {
  expect(r.code, `exit code; stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

/** A CA, and a hub certificate it signed for the name `hub` (what the leaf dials). */
async function makeTls(dir: string): Promise<void> {
  const ssl = (...args: string[]) => run("openssl", args, { cwd: dir });
  await ssl(
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "2",
    "-subj",
    "/CN=cotal-test-ca",
  );
  await ssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "hub.key", "-out", "hub.csr", "-subj", "/CN=hub");
  writeFileSync(join(dir, "ext"), "subjectAltName=DNS:hub\nextendedKeyUsage=serverAuth\n");
  await ssl("x509", "-req", "-in", "hub.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "hub.pem", "-days", "2", "-extfile", "ext");
}

/** deploy/leaf/render.mjs, as docs/remote-hosts.md runs it, into the host's /etc/cotal. */
async function renderLeafConf(): Promise<void> {
  const rendered = await run(process.execPath, [
    join(projectRoot, "deploy/leaf/render.mjs"),
    ...["--hub", `tls://hub:${leafPort}`, "--name", "hostb", "--auth-dir", join(project, ".cotal", "auth")],
    ...["--creds", "/etc/cotal/leaf.creds", "--ca", "/etc/cotal/hub-ca.pem"],
  ]);
  writeFileSync(join(etc, "leaf.conf"), rendered.stdout);
}

/** `cotal <args>` inside the leaf-host container (no shell there: node runs the bundle). */
function inHost(args: string[]): ChildProcess {
  const c = spawn("docker", ["exec", host!.getId(), "/usr/local/bin/node", "/opt/cotal/dist/cotal.mjs", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  execs.push(c);
  return c;
}
async function inHostRun(args: string[]): Promise<{ code: number | null; out: string }> {
  const c = inHost(args);
  let out = "";
  c.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  c.stderr!.on("data", (b: Buffer) => (out += b.toString()));
  const code = await new Promise<number | null>((r) => c.once("close", r));
  return { code, out };
}
async function inHostOk(args: string[]): Promise<string> {
  const { code, out } = await inHostRun(args);
  expect(code, `cotal ${args.join(" ")} in the leaf host: ${out}`).toBe(0);
  return out;
}

describe.skipIf(skip !== undefined)("a remote host on a leaf node (its own container)", () => {
  beforeAll(async () => {
    await buildCli();
    project = await mkdtemp(join(tmpdir(), "cotal-leaf-hub-"));
    etc = join(project, "hostb-etc");
    mkdirSync(etc);
    const tlsDir = join(project, "tls");
    mkdirSync(tlsDir);
    const [tag] = await Promise.all([ensureImage("cotal"), makeTls(tlsDir)]);
    network = await new Network().start();
    const gateway = (await docker(["network", "inspect", "--format", "{{range .IPAM.Config}}{{.Gateway}}{{end}}", network.getName()])).trim();
    expect(gateway).toMatch(/^\d+\.\d+\.\d+\.\d+$/);

    // The hub: a static mesh on this machine, its leaf listener on the test network's gateway.
    leafPort = await freePort();
    ok(
      await cotal(
        ...["up", "--detach", "--port", String(await freePort())],
        ...["--leaf-port", String(leafPort), "--leaf-host", gateway, "--leaf-tls-cert", join(tlsDir, "hub.pem"), "--leaf-tls-key", join(tlsDir, "hub.key")],
      ),
    );

    // What the remote host needs, made on the hub as docs/remote-hosts.md says.
    ok(await cotal("mint", "hostb_leaf", "--profile", "leaf", "--out", join(etc, "leaf.creds")));
    ok(await cotal("mint", "hostb", "--profile", "manager", "--out", join(etc, "hostb.creds")));
    ok(
      await cotal(
        "mint",
        "lucy",
        "--profile",
        "agent",
        "--allow-subscribe",
        "general",
        "--allow-publish",
        "general",
        "--provision",
        // lucy runs on hostb: its leaf connection may act as her (docs/remote-hosts.md).
        "--on",
        "hostb",
        "--out",
        join(etc, "lucy.creds"),
      ),
    );
    // The hub's seat: an agent like lucy, on this machine.
    ok(
      await cotal(
        "mint",
        "hubert",
        "--profile",
        "agent",
        "--allow-subscribe",
        "general",
        "--allow-publish",
        "general",
        "--provision",
        "--out",
        join(project, "hubert.creds"),
      ),
    );
    await renderLeafConf();
    writeFileSync(join(etc, "hub-ca.pem"), readFileSync(join(tlsDir, "ca.pem")));
    // Owned by the image's user, secrets 0600: as they would be on the remote host.
    for (const f of readdirSync(etc)) {
      chownSync(join(etc, f), UID, UID);
      chmodSync(join(etc, f), f.endsWith(".creds") ? 0o600 : 0o644);
    }
    chownSync(etc, UID, UID);

    host = await new LoopbackContainer(tag)
      .withNetwork(network)
      .withNetworkAliases("hostb")
      .withName(`cotal-test-hostb-${process.pid}`)
      .withExtraHosts([{ host: "hub", ipAddress: gateway }])
      .withBindMounts([{ source: etc, target: "/etc/cotal", mode: "ro" }])
      .withEnvironment({
        COTAL_LEAF_CONF: "/etc/cotal/leaf.conf",
        COTAL_SERVER: "nats://127.0.0.1:4222",
        COTAL_CREDS: "/etc/cotal/hostb.creds",
        COTAL_SPACE: "default",
      })
      .withCommand(["manager", "--instance", "hostb", "--stop-seats"])
      .withWaitStrategy(Wait.forLogMessage(/manager running/))
      .withStartupTimeout(60_000)
      .start();
  }, 240_000);

  afterAll(async () => {
    for (const c of execs) c.kill("SIGKILL");
    for (const p of procs) await p.stop().catch(() => undefined);
    await host?.stop({ timeout: 10_000 }).catch(() => undefined);
    await network?.stop().catch(() => undefined);
    if (project) {
      await cotal("down").catch(() => undefined);
      await rm(project, { recursive: true, force: true });
    }
  });

  it("the leaf host's manager reports in cotal ps on the hub, over one TLS leaf connection", async () => {
    await until(async () => (await cotal("ps", "--json")).stdout.includes('"hostb"'), 30_000, `hostb in cotal ps; its logs:\n${await logsOf(host!)}`);
    const logs = await logsOf(host!);
    expect(logs).toMatch(/Leafnode connection created for account: A[A-Z0-9]+/);
    // default_js_domain keeps JetStream's API open across the leaf connection (the manager's
    // heartbeat above is a KV write through it): the leaf server logs no deny (2.10 would say
    // `JetStream using domains: local "", remote ""`, 2.9 `JetStream Not Extended`).
    expect(logs).not.toMatch(/JetStream using domains|JetStream Not Extended/);
    // The leaf server is the only thing that dials out; the manager talks to it on loopback.
    const hubLog = readFileSync(join(project, ".cotal", "logs", "nats-server.log"), "utf8");
    expect(hubLog).toMatch(/Leafnode connection created/);
  }, 60_000);

  it("cotal spawn --on hostb starts an echo seat on the leaf host that answers a DM from the hub", async () => {
    const spawned = ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "parrot", "--on", "hostb", "--json"));
    expect(spawned.json()).toMatchObject({ name: "parrot", instance: "hostb", outcome: "started" });
    const top = await docker(["top", host!.getId(), "-o", "pid,uid,args"]);
    expect(top).toMatch(/\d+\s+10001\s+\/usr\/local\/bin\/node .*\/opt\/cotal\/dist\/echo-seat\.mjs/);
    const listen = CotalProcess.spawn(["listen", "--as", "carol", "--impersonate", "--json"], { cwd: project, env: cleanEnv() });
    procs.push(listen);
    await listen.waitForJson((l: { type?: string }) => l.type === "ready", 20_000, "listen ready");
    ok(await cotal("send", "dm", "parrot", "polly?", "--as", "carol", "--impersonate"));
    await listen.waitForJson(
      (l: { type?: string; text?: string }) => l.type === "message" && l.text === "echo: polly?",
      30_000,
      "the echo reply from the leaf host",
    );
    await listen.stop();
    const stopped = ok(await cotal("stop", "--name", "parrot"));
    expect(stopped.stdout).toMatch(/1 credential revoked/);
  }, 120_000);

  it("a seat on the leaf host and a seat on the hub exchange DMs and channel posts", async () => {
    hubert = CotalProcess.spawn(["listen", "--json", "--channel", "general", "--creds", join(project, "hubert.creds")], { cwd: project, env: cleanEnv() });
    procs.push(hubert);
    await hubert.waitForJson((l: { type?: string }) => l.type === "ready", 20_000, "hubert ready");

    // lucy listens inside the leaf host, on her own credential (checked by the leaf server).
    const lucy = inHost(["listen", "--json", "--channel", "general", "--creds", "/etc/cotal/lucy.creds"]);
    const lucyLines: string[] = [];
    let partial = "";
    lucy.stdout!.on("data", (b: Buffer) => {
      const parts = (partial + b.toString()).split("\n");
      partial = parts.pop() ?? "";
      lucyLines.push(...parts);
    });
    let lucyErr = "";
    lucy.stderr!.on("data", (b: Buffer) => (lucyErr += b.toString()));
    const lucySaw = (pred: (l: { type?: string; kind?: string; from?: string; text?: string }) => boolean) =>
      lucyLines.some((l) => {
        try {
          return pred(JSON.parse(l) as { type?: string });
        } catch {
          return false;
        }
      });
    await until(() => lucySaw((l) => l.type === "ready"), 30_000, `lucy ready in the leaf host; stderr: ${lucyErr}`);

    // Hub → leaf host.
    const asHubert = ["--creds", join(project, "hubert.creds")];
    ok(await cotal("send", "msg", "general", "hello from the hub", ...asHubert));
    ok(await cotal("send", "dm", "lucy", "dm from the hub", ...asHubert));
    await until(
      () => lucySaw((l) => l.type === "message" && l.from === "local.hubert" && l.text === "hello from the hub"),
      30_000,
      `lucy to get hubert's post; lines: ${lucyLines.join("\n")}`,
    );
    await until(
      () => lucySaw((l) => l.type === "message" && l.kind === "dm" && l.from === "local.hubert" && l.text === "dm from the hub"),
      30_000,
      `lucy to get hubert's DM; lines: ${lucyLines.join("\n")}`,
    );

    // Leaf host → hub.
    await inHostOk(["send", "msg", "general", "hello from the leaf", "--creds", "/etc/cotal/lucy.creds"]);
    await inHostOk(["send", "dm", "hubert", "dm from the leaf", "--creds", "/etc/cotal/lucy.creds"]);
    await hubert.waitForJson(
      (l: { type?: string; from?: string; text?: string }) => l.type === "message" && l.from === "local.lucy" && l.text === "hello from the leaf",
      30_000,
      "hubert to get lucy's post",
    );
    await hubert.waitForJson(
      (l: { type?: string; kind?: string; from?: string; text?: string }) =>
        l.type === "message" && l.kind === "dm" && l.from === "local.lucy" && l.text === "dm from the leaf",
      30_000,
      "hubert to get lucy's DM",
    );

    // The leaf server enforces lucy's own permissions: she may not post outside her channels.
    const refused = inHost(["send", "msg", "builds", "not mine", "--creds", "/etc/cotal/lucy.creds"]);
    const code = await new Promise<number | null>((r) => refused.once("close", r));
    expect(code).not.toBe(0);
  }, 150_000);

  it("a revocation reaches the leaf server when its config is rendered again and reloaded; revoking the leaf credential cuts the host off", async () => {
    const asLucy = ["--creds", "/etc/cotal/lucy.creds"];
    const hubLog = () => readFileSync(join(project, ".cotal", "logs", "nats-server.log"), "utf8");
    const leafConnects = () => (hubLog().match(/Leafnode connection created/g) ?? []).length;
    const connectsBefore = leafConnects();
    ok(await cotal("revoke", "lucy"));
    // The leaf server resolves accounts from its config, so lucy's revoked credential still
    // connects there (docs/security.md, "Leaf-node hosts"); but the hub narrowed the leaf's scope
    // and remade its connection: nothing she sends passes the hub any more.
    await until(() => leafConnects() > connectsBefore, 30_000, "the hub to remake the leaf connection under its narrowed scope");
    await until(async () => (await cotal("ps", "--on", "hostb")).code === 0, 30_000, "hostb's manager to answer again");
    const stillThere = await inHostRun(["send", "msg", "general", "still here", ...asLucy]);
    expect(stillThere.code, stillThere.out).not.toBe(0);

    // Rendered again (the clients account's JWT now carries the revocation) and reloaded with
    // SIGHUP, which the image's entrypoint hands to the leaf server: refused, nothing restarted.
    await renderLeafConf();
    const reloads = async () => ((await logsOf(host!)).match(/Reloaded server configuration/g) ?? []).length;
    const before = await reloads();
    await docker(["kill", "--signal", "HUP", host!.getId()]);
    await until(async () => (await reloads()) > before, 20_000, "the leaf server to reload its config");
    const refused = await inHostRun(["send", "msg", "general", "after the re-render", ...asLucy]);
    expect(refused.code, refused.out).not.toBe(0);
    expect(refused.out).toMatch(/revoked|refused/i);
    // The manager kept running through the reload.
    expect((await cotal("ps", "--on", "hostb", "--json")).code).toBe(0);

    // Revoking the leaf credential closes the host's one connection at the hub.
    const closedBefore = (hubLog().match(/Leafnode connection closed/g) ?? []).length;
    ok(await cotal("revoke", "hostb_leaf"));
    await until(() => (hubLog().match(/Leafnode connection closed/g) ?? []).length > closedBefore, 30_000, "the hub to close the leaf connection");
    await until(async () => (await cotal("ps", "--on", "hostb")).code !== 0, 30_000, "hostb's manager to stop answering on the hub");
  }, 180_000);
});
