// The shipped entry point as a child process over stdio: it starts, serves, and shuts down once,
// leaving the mesh (offline presence) when its stdin closes; it refuses bad launches and a
// principal another connector holds.
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { NatsServer, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { COTAL_PROTOCOL_VERSION } from "../../schemas/index.js";
import { CONNECTOR_BUNDLE, ensureBuilt } from "./built.js";
import { call, dmConsumerInfo, tempControlDir } from "./helpers.js";

/** An MCP client transport over a child we spawned ourselves (so we see its exit). */
class ChildTransport implements Transport {
  onmessage?: (m: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (e: Error) => void;
  private readonly buf = new ReadBuffer();
  constructor(private readonly child: ChildProcess) {}
  async start(): Promise<void> {
    this.child.stdout!.on("data", (d: Buffer) => {
      this.buf.append(d);
      for (let m = this.buf.readMessage(); m; m = this.buf.readMessage()) this.onmessage?.(m);
    });
    this.child.once("close", () => this.onclose?.());
  }
  async send(m: JSONRPCMessage): Promise<void> {
    this.child.stdin!.write(serializeMessage(m));
  }
  async close(): Promise<void> {
    this.child.stdin!.end();
  }
}

interface Started {
  child: ChildProcess;
  exit: Promise<number | null>;
  logs: () => Array<Record<string, unknown>>;
  stderr: () => string;
}

function startBundle(env: Record<string, string>): Started {
  const child = spawn(process.execPath, [CONNECTOR_BUNDLE], {
    env: { PATH: process.env.PATH ?? "", COTAL_LOG_LEVEL: "info", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (s: string) => (stderr += s));
  const exit = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const logs = () =>
    stderr
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { child, exit, logs, stderr: () => stderr };
}

/** This test's server (each test gets its own, so its streams stay within one server's JetStream limits). */
let server: NatsServer;
const cleanups: Array<() => unknown> = [];
beforeAll(() => {
  ensureBuilt();
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => undefined);
});

let n = 0;
async function setup() {
  const own = await NatsServer.start();
  server = own;
  cleanups.push(() => own.cleanup());
  const mesh = await TestMesh.start(server, `stdio${++n}`);
  cleanups.push(() => mesh.close());
  const ctl = tempControlDir();
  cleanups.push(ctl.cleanup);
  const env = { COTAL_SERVER: server.url, COTAL_SPACE: mesh.space, COTAL_NAME: "bob", COTAL_CONTROL_DIR: ctl.dir };
  return { mesh, env, ctl };
}

/** Connect an MCP client and call a tool: a session using the seat, so the connector joins. */
async function attach(s: Started): Promise<Client> {
  const client = new Client({ name: "stdio-test", version: "0" });
  await client.connect(new ChildTransport(s.child));
  await call(client, "cotal_status");
  return client;
}

function kill(s: Started): void {
  if (s.child.exitCode === null) s.child.kill("SIGKILL");
}

describe("the connector bundle over stdio", () => {
  it("starts, serves tools, and on stdin close leaves the mesh (offline presence) and exits 0, once", async () => {
    const { mesh, env } = await setup();
    const s = startBundle(env);
    cleanups.push(() => kill(s));
    const client = new Client({ name: "stdio-test", version: "0" });
    await client.connect(new ChildTransport(s.child));
    expect((await client.listTools()).tools.map((t) => t.name)).toHaveLength(12); // the eleven mesh tools and cotal_run

    const alice = await mesh.joined("alice");
    const roster = await alice.roster();
    // The first tool call joins the seat.
    const r = await call(client, "cotal_dm", { to: "alice", text: "hi from a child process" });
    expect(r.data).toMatchObject({ target: { kind: "dm", to: "local.alice", recipient: "idle" } });
    expect(r.text).toMatch(/^DM to local\.alice from local\.bob .*recipient idle at send\.$/);
    await until(() => roster.get("local.bob")?.status === "idle", 5_000, "bob is on the roster");

    s.child.stdin!.end();
    expect(await s.exit).toBe(0);
    // Offline because it said so: its own last record reads offline (a key the mesh service
    // deleted for silence would keep the record's last status and read offline as deleted).
    await until(() => roster.get("local.bob")?.presence.status === "offline", 3_000, "bob's final presence record is offline");
    const leaving = s.logs().filter((l) => l.msg === "leaving the mesh");
    expect(leaving).toEqual([expect.objectContaining({ reason: "stdin closed", component: "connector", me: "local.bob" })]);
  });

  it("a connector started only for a health check (initialize, list tools, close) takes no mail and leaves presence alone", async () => {
    const { mesh, env } = await setup();
    const bob = await mesh.joined("bob"); // an earlier session: bob's DM inbox exists
    await bob.close();
    const alice = await mesh.joined("alice");
    const roster = await alice.roster();
    await until(() => roster.get("local.bob")?.presence.status === "offline", 3_000, "bob's earlier session left");
    const before = roster.get("local.bob")!.presence;
    await alice.dm("bob", "waiting for your next session");
    await until(async () => (await dmConsumerInfo(mesh, "bob")).num_pending === 1, 3_000, "the DM waits in bob's inbox");

    const s = startBundle(env);
    cleanups.push(() => kill(s));
    const client = new Client({ name: "health-check", version: "0" });
    await client.connect(new ChildTransport(s.child));
    expect((await client.listTools()).tools.map((t) => t.name)).toHaveLength(12); // the eleven mesh tools and cotal_run
    s.child.stdin!.end();
    expect(await s.exit).toBe(0);

    const info = await dmConsumerInfo(mesh, "bob");
    expect({ pending: info.num_pending, ackPending: info.num_ack_pending, redelivered: info.num_redelivered }).toEqual({
      pending: 1,
      ackPending: 0,
      redelivered: 0,
    });
    expect(roster.get("local.bob")!.presence).toEqual(before);
    expect(s.logs().some((l) => l.msg === "joined")).toBe(false);
  });

  it("joins at start, with no session attached, when COTAL_JOIN_ON=start", async () => {
    const { mesh, env } = await setup();
    const alice = await mesh.joined("alice");
    const roster = await alice.roster();
    const s = startBundle({ ...env, COTAL_JOIN_ON: "start" });
    cleanups.push(() => kill(s));
    await until(() => roster.get("local.bob")?.status === "idle", 5_000, "bob joined without any hook or tool call");
    s.child.stdin!.end();
    expect(await s.exit).toBe(0);
  });

  it("leaves once on SIGTERM, too", async () => {
    const { mesh, env } = await setup();
    const s = startBundle(env);
    cleanups.push(() => kill(s));
    await attach(s);
    const alice = await mesh.joined("alice");
    const roster = await alice.roster();
    await until(() => roster.get("local.bob")?.status === "idle", 5_000, "bob is on the roster");
    s.child.kill("SIGTERM");
    expect(await s.exit).toBe(0);
    await until(() => roster.get("local.bob")?.presence.status === "offline", 3_000, "bob's final presence record is offline");
    expect(
      s
        .logs()
        .filter((l) => l.msg === "leaving the mesh")
        .map((l) => l.reason),
    ).toEqual(["SIGTERM"]);
  });

  it("a second connector for the same principal refuses (exit 3) and the first one keeps serving", async () => {
    const { mesh, env } = await setup();
    const first = startBundle(env);
    cleanups.push(() => kill(first));
    await attach(first);
    const alice = await mesh.joined("alice");
    const roster = await alice.roster();
    await until(() => roster.get("local.bob")?.status === "idle", 5_000, "the first connector joined");
    const second = startBundle(env);
    cleanups.push(() => kill(second));
    expect(await second.exit).toBe(3);
    expect(second.stderr()).toContain("cotal connector: Another connector on this host already holds local.bob");
    // …and says how to run two: another credential, or another name.
    expect(second.stderr()).toMatch(/To run two sessions, start the second under another name: .*cotal mint <name>.*COTAL_CREDS.*COTAL_NAME=<another name>/);
    expect(second.logs().some((l) => l.msg === "joined")).toBe(false);
    expect(first.child.exitCode).toBeNull();
    first.child.stdin!.end();
    expect(await first.exit).toBe(0);
  });

  it("refuses both launch forms (exit 2) and unsafe launch material, with the remedy", async () => {
    const { env, ctl } = await setup();
    const material = path.join(ctl.dir, "launch.json");
    writeFileSync(material, JSON.stringify({ server: server.url, space: "x", name: "bob", controlToken: "t".repeat(40) }));
    chmodSync(material, 0o644);
    const both = startBundle({ ...env, COTAL_LAUNCH_MATERIAL: material });
    expect(await both.exit).toBe(2);
    expect(both.stderr()).toContain("cotal connector: Both launch forms are set: COTAL_LAUNCH_MATERIAL and COTAL_SERVER, COTAL_SPACE, COTAL_NAME.");
    const unsafe = startBundle({ COTAL_LAUNCH_MATERIAL: material, COTAL_CONTROL_DIR: ctl.dir });
    expect(await unsafe.exit).toBe(2);
    expect(unsafe.stderr()).toMatch(/has mode 644, not 600.*Run `chmod 600/);
  });

  it("joins from launch material", async () => {
    const { mesh, ctl } = await setup();
    const material = path.join(ctl.dir, "launch.json");
    writeFileSync(
      material,
      JSON.stringify({
        server: server.url,
        space: mesh.space,
        name: "carol",
        role: "reviewer",
        channels: ["general"],
        controlToken: "k".repeat(48),
        uid: "abcdefghijklmnopqrstuvwxyz",
      }),
      { mode: 0o600 },
    );
    const s = startBundle({ COTAL_LAUNCH_MATERIAL: material, COTAL_CONTROL_DIR: ctl.dir });
    cleanups.push(() => kill(s));
    await attach(s);
    const alice = await mesh.joined("alice");
    const roster = await alice.roster();
    await until(() => roster.get("local.carol")?.presence.channels.includes("general") === true, 5_000, "carol joined (and #general) from launch material");
    expect(roster.get("local.carol")?.presence).toMatchObject({
      card: { kind: "agent", owner: "local", actor: "carol", role: "reviewer", protocolVersion: COTAL_PROTOCOL_VERSION, meta: { connector: "claude-code" } },
      lifecycleUid: "abcdefghijklmnopqrstuvwxyz",
      channels: ["general"],
    });
    s.child.stdin!.end();
    expect(await s.exit).toBe(0);
  });
});

/** A client speaking raw JSON-RPC lines to the bundle, as the MCP Inspector and the conformance suite do. */
function rawClient(s: Started) {
  const got: Array<Record<string, unknown>> = [];
  let buf = "";
  s.child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    buf += d;
    for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
      got.push(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
      buf = buf.slice(nl + 1);
    }
  });
  return {
    send: (line: string) => s.child.stdin!.write(`${line}\n`),
    /** The answer whose id is `id` (null: the answer to a line that had no readable id). */
    answer: async (id: number | null, what: string) => {
      let found: Record<string, unknown> | undefined;
      await until(() => (found = got.find((m) => m.id === id && ("result" in m || "error" in m))) !== undefined, 5_000, what);
      got.splice(got.indexOf(found!), 1);
      return found as { id: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } };
    },
  };
}

/** The SDK's own client on a fresh bundle of bob. */
async function sdkClient(): Promise<Client> {
  const { env } = await setup();
  const s = startBundle(env);
  cleanups.push(() => kill(s));
  const client = new Client({ name: "sdk", version: "0" });
  await client.connect(new ChildTransport(s.child));
  return client;
}

describe("the connector bundle answers JSON-RPC as MCP clients expect", () => {
  it("parse errors, invalid requests, bad tools/call params and unknown tools get their JSON-RPC errors, and it keeps serving", async () => {
    const { env } = await setup();
    const s = startBundle(env);
    cleanups.push(() => kill(s));
    const rpc = rawClient(s);
    rpc.send(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
      }),
    );
    expect((await rpc.answer(1, "initialize answered")).result).toMatchObject({ serverInfo: { name: "cotal" } });
    rpc.send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));

    rpc.send("{not json");
    expect((await rpc.answer(null, "an answer to a line that is not JSON")).error).toMatchObject({
      code: -32700,
      message: expect.stringMatching(/^Parse error/),
    });
    rpc.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: [1, 2] }));
    expect((await rpc.answer(2, "an answer to array params")).error).toMatchObject({ code: -32600, message: expect.stringMatching(/^Invalid Request/) });
    rpc.send(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "cotal_nope", arguments: {} } }));
    expect((await rpc.answer(3, "an answer to an unknown tool")).error).toEqual({ code: -32602, message: expect.stringMatching(/^Unknown tool: cotal_nope/) });
    rpc.send(JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "cotal_status", arguments: null } }));
    expect((await rpc.answer(4, "an answer to arguments: null")).error).toMatchObject({ code: -32602, message: expect.stringMatching(/^Invalid params/) });

    // Still serving: a good call after the bad ones.
    rpc.send(JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "cotal_status", arguments: {} } }));
    expect((await rpc.answer(5, "cotal_status answered")).result).toMatchObject({ content: [{ type: "text", text: expect.stringContaining("local.bob") }] });
  });

  it("every tool carries a title and the four behaviour hints", async () => {
    const client = await sdkClient();
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(0);
    for (const t of tools) {
      expect(t.title, t.name).toEqual(expect.any(String));
      expect(t.annotations, t.name).toMatchObject({
        title: t.title,
        readOnlyHint: expect.any(Boolean),
        destructiveHint: expect.any(Boolean),
        idempotentHint: expect.any(Boolean),
        openWorldHint: expect.any(Boolean),
      });
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
    expect(byName.cotal_roster).toMatchObject({ readOnlyHint: true });
    expect(byName.cotal_send).toMatchObject({ readOnlyHint: false, idempotentHint: false, openWorldHint: true });
    expect(byName.cotal_leave).toMatchObject({ destructiveHint: true });
  });

  it("cotal_run refuses a jsonSchema that is not a JSON Schema, naming what is wrong", async () => {
    const client = await sdkClient();
    const run = async (jsonSchema: unknown) => {
      const r = await client.callTool({ name: "cotal_run", arguments: { personas: ["reviewer"], prompt: "hi", jsonSchema } });
      return { isError: r.isError, text: (r.content as Array<{ text: string }>)[0]!.text };
    };
    expect(await run({ type: "object", properties: { answer: { type: 5 } } })).toEqual({
      isError: true,
      text: expect.stringContaining("jsonSchema.properties.answer.type must be one of string, number, integer, boolean, object, array, null"),
    });
    expect(await run({ answer: "string" })).toEqual({
      isError: true,
      text: expect.stringContaining("jsonSchema is not a JSON Schema: none of its keys (answer)"),
    });
    expect(await run({ type: "object", required: "answer" })).toEqual({ isError: true, text: expect.stringContaining("jsonSchema.required must be an array") });
  });
});
