// The hub side of leaf nodes: `cotal up --leaf-port` with TLS from checked certificate files. A
// remote host's nats-server (here a second native process on loopback, configured by
// deploy/leaf/render.mjs as a real remote host would be) joins over TLS with a `leaf` credential;
// an endpoint on it and one on the hub exchange DMs, and a `cotal manager` on it runs seats for
// `cotal spawn --on`, across revocations (each one an update of the clients account, after which
// the hub re-judges what interest the leaf may have). A leaf that trusts another CA is refused.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Endpoint } from "../../broker/index.js";
import { messageText } from "../../schemas/index.js";
import { collect } from "../harness/deliveries.js";
import { buildCli, cleanEnv, CotalProcess, freePort, projectRoot, runCotal } from "../harness/cli.js";
import { findNatsServer } from "../../testbed/nats-server.js";
import { until } from "../../testbed/until.js";

const dir = mkdtempSync(join(tmpdir(), "cotal-leaf-"));
const hub = join(dir, "hub");
const certs = join(dir, "certs");
const env = cleanEnv();
let hubPort = 0;
let leafPort = 0;
const leaves: Array<{ child: ChildProcess; log: () => string }> = [];

/** openssl at test time: a CA, the hub's certificate for 127.0.0.1 signed by it, and an unrelated CA. */
function makeCerts(): void {
  const ssl = (...args: string[]) => {
    const r = spawnSync("openssl", args, { cwd: certs, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr}`);
  };
  spawnSync("mkdir", ["-p", certs]);
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  ssl("req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=cotal-test-ca");
  ssl("req", ...ec, "-keyout", "hub.key", "-out", "hub.csr", "-subj", "/CN=127.0.0.1");
  writeFileSync(join(certs, "ext.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  ssl("x509", "-req", "-in", "hub.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "hub.pem", "-days", "1", "-extfile", "ext.cnf");
  ssl("req", "-x509", ...ec, "-keyout", "other.key", "-out", "other.pem", "-days", "1", "-subj", "/CN=another-ca");
}

async function cotal(args: string[], cwd = hub) {
  const r = await runCotal(args, { cwd, env, timeoutMs: 60_000 });
  if (r.code !== 0) throw new Error(`cotal ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r;
}

/** A leaf host's nats-server, its config rendered by deploy/leaf/render.mjs on the mesh host. */
async function startLeaf(name: string, ca: string): Promise<{ port: number; log: () => string }> {
  const port = await freePort();
  const render = spawnSync(
    process.execPath,
    [
      join(projectRoot, "deploy/leaf/render.mjs"),
      "--hub",
      `tls://127.0.0.1:${leafPort}`,
      "--auth-dir",
      join(hub, ".cotal/auth"),
      "--name",
      name,
      "--listen",
      `127.0.0.1:${port}`,
      "--creds",
      join(dir, "leaf.creds"),
      "--ca",
      ca,
    ],
    { encoding: "utf8" },
  );
  expect(render.status, render.stderr).toBe(0);
  const conf = join(dir, `${name}.conf`);
  writeFileSync(conf, render.stdout);
  let out = "";
  const child = spawn(findNatsServer(), ["-c", conf], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr!.on("data", (b: Buffer) => (out += b.toString()));
  const leaf = { child, log: () => out };
  leaves.push(leaf);
  await until(() => /Server is ready/.test(out), 10_000, `leaf ${name} to start`);
  return { port, log: leaf.log };
}

beforeAll(async () => {
  await buildCli();
  makeCerts();
  spawnSync("mkdir", ["-p", hub]);
  hubPort = await freePort();
  leafPort = await freePort();
  await cotal([
    "up",
    "-d",
    "--port",
    String(hubPort),
    "--leaf-port",
    String(leafPort),
    "--leaf-tls-cert",
    join(certs, "hub.pem"),
    "--leaf-tls-key",
    join(certs, "hub.key"),
  ]);
  await cotal(["mint", "hostb_leaf", "--profile", "leaf", "--out", join(dir, "leaf.creds")]);
  await cotal(["mint", "hostb", "--profile", "manager", "--out", join(dir, "hostb.creds")]);
  await cotal(["mint", "alice", "--profile", "agent", "--provision", "--out", join(dir, "alice.creds")]);
  // bob runs on the leaf host: its connection may act as him.
  await cotal(["mint", "bob", "--profile", "agent", "--provision", "--on", "hostb", "--out", join(dir, "bob.creds")]);
}, 120_000);

afterAll(async () => {
  for (const l of leaves) l.child.kill("SIGKILL");
  await runCotal(["down"], { cwd: hub, env, timeoutMs: 60_000 }).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

describe("cotal up --leaf-port (hub side of leaf nodes)", () => {
  it("refuses a leaf listener without TLS off loopback, and certificate files that are not PEM", async () => {
    const other = join(dir, "other-project");
    spawnSync("mkdir", ["-p", other]);
    const noTls = await runCotal(["up", "-d", "--port", String(await freePort()), "--leaf-port", String(await freePort()), "--leaf-host", "0.0.0.0"], {
      cwd: other,
      env,
    });
    expect(noTls.code).toBe(2);
    expect(noTls.stderr).toMatch(/without TLS/);
    const notPem = await runCotal(["up", "-d", "--leaf-port", "7422", "--leaf-tls-cert", join(certs, "ext.cnf"), "--leaf-tls-key", join(certs, "hub.key")], {
      cwd: other,
      env,
    });
    expect(notPem.code).toBe(2);
    expect(notPem.stderr).toMatch(/--leaf-tls-cert: .*ext\.cnf is not a PEM certificate/);
    const wrongKey = await runCotal(
      ["up", "-d", "--leaf-port", "7422", "--leaf-tls-cert", join(certs, "hub.pem"), "--leaf-tls-key", join(certs, "other.key")],
      { cwd: other, env },
    );
    expect(wrongKey.code).toBe(2);
    expect(wrongKey.stderr).toMatch(/is not the private key of/);
  });

  it("an endpoint on a leaf host exchanges DMs with one on the hub, over TLS with a leaf credential, and its acks hold after a revocation", async () => {
    const leaf = await startLeaf("hostb", join(certs, "ca.pem"));
    await until(() => /Leafnode connection created/.test(leaf.log()), 10_000, "the leaf to connect to the hub");
    // default_js_domain kept JetStream's API open across the connection: no deny notice (2.10 says
    // `JetStream using domains: local "", remote ""`, 2.9 `JetStream Not Extended`), and bob binds below.
    expect(leaf.log()).not.toMatch(/JetStream using domains|JetStream Not Extended/);
    const alice = await Endpoint.connect({ server: `nats://127.0.0.1:${hubPort}`, space: "default", name: "alice", creds: join(dir, "alice.creds") });
    const bob = await Endpoint.connect({ server: `nats://127.0.0.1:${leaf.port}`, space: "default", name: "bob", creds: join(dir, "bob.creds") });
    try {
      await alice.join();
      await bob.join();
      const got = { alice: collect(alice), bob: collect(bob, { ack: false }) };
      /** bob acks a DM: resolves once the broker confirmed it (ack-batch.ts), so it will not come back. */
      const ackAtBob = (text: string) => got.bob.items.find((d) => messageText(d.message) === text)!.ack();
      await bob.dm("alice", "hello from the leaf host");
      await until(() => got.alice.texts().includes("hello from the leaf host"), 10_000, "alice (hub) to get bob's DM from the leaf");
      await alice.dm("bob", "hello back from the hub");
      await until(() => got.bob.texts().includes("hello back from the hub"), 10_000, "bob (leaf) to get alice's DM from the hub");
      await ackAtBob("hello back from the hub");
      // A revocation updates the clients account; the hub used to withdraw the leaf's interest in
      // acks then: bob still got DMs, but his acks found no responders and every DM came back.
      await cotal(["mint", "carl", "--profile", "agent", "--out", join(dir, "carl.creds")]);
      await cotal(["revoke", "carl"]);
      await alice.dm("bob", "after a revocation");
      await until(() => got.bob.texts().includes("after a revocation"), 10_000, "bob (leaf) to get alice's DM after the revocation");
      await ackAtBob("after a revocation");
    } finally {
      await bob.close();
      await alice.close();
    }
  });

  it("a leaf host's manager starts and stops seats for cotal spawn --on and cotal stop, before and after a revocation", { timeout: 120_000 }, async () => {
    const leaf = await startLeaf("hostb-mgr", join(certs, "ca.pem"));
    await until(() => /Leafnode connection created/.test(leaf.log()), 10_000, "the leaf to connect to the hub");
    const manager = CotalProcess.spawn(["manager", "--instance", "hostb", "--stop-seats", "--state-dir", join(dir, "hostb-state")], {
      cwd: dir,
      env: cleanEnv({ COTAL_SERVER: `nats://127.0.0.1:${leaf.port}`, COTAL_CREDS: join(dir, "hostb.creds"), COTAL_SPACE: "default" }),
    });
    try {
      await until(async () => (await runCotal(["ps", "--json"], { cwd: hub, env })).stdout.includes('"hostb"'), 30_000, "hostb in cotal ps");
      // Every seat-log record the manager appends crosses the leaf connection. `cotal stop` revokes
      // the seat's credential, an update of the clients account, after which the hub used to stop
      // sending the leaf its interest in the seat log: that stop's `retired` record (and every
      // append after it) found no responders. The second seat is started after that revocation.
      for (const name of ["parrot", "macaw"]) {
        const spawned = await cotal(["spawn", "-d", "--agent", "echo", "--name", name, "--on", "hostb", "--json"]);
        expect(spawned.json()).toMatchObject({ name, instance: "hostb", outcome: "started" });
        const stopped = await cotal(["stop", "--name", name]);
        expect(stopped.stdout).toMatch(/1 credential revoked/);
      }
      // Each new seat widens the leaf's scope and the hub remakes the host's one connection: a seat
      // already running there keeps its mail across that. A DM that meets a pull the seat sent
      // before the remake is lost on the way and comes again after the ack wait (30 s; nats-server
      // drops the import's reply route with the old connection): late, never lost (docs/security.md).
      const alice = await Endpoint.connect({ server: `nats://127.0.0.1:${hubPort}`, space: "default", name: "alice", creds: join(dir, "alice.creds") });
      try {
        await alice.join();
        const got = collect(alice);
        await cotal(["spawn", "-d", "--agent", "echo", "--name", "kea", "--on", "hostb", "--json"]);
        await alice.dm("kea", "before");
        await until(() => got.texts().includes("echo: before"), 20_000, "kea's echo before the next spawn");
        await cotal(["spawn", "-d", "--agent", "echo", "--name", "owl", "--on", "hostb", "--json"]);
        await alice.dm("kea", "after");
        await alice.dm("owl", "hello owl");
        await until(() => got.texts().includes("echo: hello owl"), 30_000, "owl");
        await until(() => got.texts().includes("echo: after") && got.texts().includes("echo: hello owl"), 60_000, "both seats' echoes after owl's spawn");
        for (const name of ["kea", "owl"]) await cotal(["stop", "--name", name]);
      } finally {
        await alice.close();
      }
    } finally {
      await manager.stop("SIGTERM");
    }
    // No append or call found nobody to take it for good. A heartbeat may meet the moment the hub
    // remakes the connection (logged once, then "works again"); nothing else may.
    const unserved = manager.stderr.split("\n").filter((l) => /no responders/.test(l) && !/manager heartbeat failed/.test(l));
    expect(unserved).toEqual([]);
    if (/manager heartbeat failed/.test(manager.stderr)) expect(manager.stderr).toMatch(/manager heartbeat works again/);
  });

  it("a leaf that does not trust the hub's CA is refused", async () => {
    const leaf = await startLeaf("hostc", join(certs, "other.pem"));
    await until(
      () => /Leafnode connection closed: TLS Handshake Failure/.test(leaf.log()),
      10_000,
      "the leaf to close its connection for a failed TLS handshake",
    );
    // 2.10 words it `TLS leafnode handshake error: tls: failed to verify certificate: x509: …`.
    expect(leaf.log()).toMatch(/TLS leafnode handshake error: .*x509: certificate signed by unknown authority/);
    // nats-server logs "created" when the TCP connection opens, before TLS: every one it opened was
    // closed again (one may be mid-handshake while the log is read: it retries every second).
    const log = leaf.log();
    const created = log.match(/Leafnode connection created/g)?.length ?? 0;
    const closed = log.match(/Leafnode connection closed/g)?.length ?? 0;
    expect(created - closed).toBeLessThanOrEqual(1);
  });
});
