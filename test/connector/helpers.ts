// Helpers for connector tests: an in-process connector on a harness mesh with a private control
// directory, an MCP client over an in-memory transport, and the real hook relay run in-process.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult, JSONRPCNotification } from "@modelcontextprotocol/sdk/types.js";
import { jetstreamManager, type ConsumerInfo, type JetStreamManager } from "@nats-io/jetstream";
import { Connector, runHook, seatPaths, type ConnectorOptions, type Launch, type Mail, type SeatPaths } from "../../connector/internal.js";
import type { CotalMessage, Part } from "../../schemas/index.js";
import { afterAll, afterEach, beforeAll } from "vitest";
import { NatsServer } from "../../testbed/nats-server.js";
import type { TestMesh } from "../harness/mesh.js";

/**
 * One nats-server for a file's tests (started before them, stopped after), and the file's cleanups,
 * run after each test, last added first: seats close before their mesh, the mesh before the server.
 */
export function serverPerFile(): { server: () => NatsServer; cleanups: Array<() => Promise<unknown> | unknown> } {
  let server: NatsServer | undefined;
  const cleanups: Array<() => Promise<unknown> | unknown> = [];
  beforeAll(async () => {
    server = await NatsServer.start();
  });
  afterAll(async () => {
    await server?.cleanup();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => undefined);
  });
  return { server: () => server!, cleanups };
}

/** A private (0700) control directory, removed by `cleanup()`. */
export function tempControlDir(): { dir: string; cleanup: () => void } {
  const root = mkdtempSync(path.join(os.tmpdir(), "cotal-ctl-"));
  return { dir: root, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

export function envLaunch(mesh: TestMesh, name: string, extra: Partial<Launch> = {}): Launch {
  return { source: "env", server: mesh.server.url, space: mesh.space, owner: "local", name, channels: [], ...extra };
}

/** Start an in-process connector for `name` with its own control directory. */
export async function startConnector(
  mesh: TestMesh,
  name: string,
  opts: Partial<Omit<ConnectorOptions, "launch">> & { launch?: Partial<Launch>; controlDir?: string } = {},
): Promise<{ connector: Connector; env: NodeJS.ProcessEnv; close: () => Promise<void> }> {
  const ctl = opts.controlDir ? { dir: opts.controlDir, cleanup: () => undefined } : tempControlDir();
  const env: NodeJS.ProcessEnv = { COTAL_CONTROL_DIR: ctl.dir, COTAL_SPACE: mesh.space, COTAL_NAME: name };
  const { launch, controlDir: _cd, ...rest } = opts;
  let connector: Connector;
  try {
    // Tests that exercise tools and hooks directly want a joined seat; pass joinOn "first-use" for the production default.
    connector = await Connector.start({ env, joinOn: "start", ...rest, launch: envLaunch(mesh, name, launch) });
  } catch (err) {
    ctl.cleanup();
    throw err;
  }
  return {
    connector,
    env,
    close: async () => {
      await connector.close("test over");
      ctl.cleanup();
    },
  };
}

/** The seat files of the connector `startConnector` started with `env` (its socket, token file, …). */
export function seatFiles(env: NodeJS.ProcessEnv): SeatPaths {
  return seatPaths(env.COTAL_CONTROL_DIR!, { space: env.COTAL_SPACE!, owner: "local", actor: env.COTAL_NAME! });
}

/** The token a hand-started seat's hooks read (the connector writes it to its token file). */
export function seatToken(env: NodeJS.ProcessEnv): string {
  return readFileSync(seatFiles(env).tokenFile, "utf8").trim();
}

/** Messages a connector holds, as cotal_status counts them (handed-over ones included until acked). */
export function held(connector: Connector): number {
  return connector.status().inbox.total;
}

/** An MCP client connected to the connector over an in-memory pair; collects notifications. */
export async function mcpClient(connector: Connector): Promise<{ client: Client; notifications: JSONRPCNotification[]; close: () => Promise<void> }> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await connector.serve(serverSide);
  const client = new Client({ name: "test", version: "0" });
  const notifications: JSONRPCNotification[] = [];
  client.fallbackNotificationHandler = async (n) => {
    notifications.push(n as JSONRPCNotification);
  };
  await client.connect(clientSide);
  return { client, notifications, close: () => client.close() };
}

/** Call a tool and return its text and error flag (and its structured content, when it has one). */
export async function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<{ text: string; isError: boolean; data?: Record<string, unknown> }> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = r.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
  return { text, isError: r.isError === true, ...(r.structuredContent ? { data: r.structuredContent } : {}) };
}

/** Run the real hook relay in-process; returns what it printed (parsed) and the raw text. */
export async function hook(
  env: NodeJS.ProcessEnv,
  event: string,
  payload: Record<string, unknown> = {},
  write?: (text: string) => Promise<void>,
): Promise<{ raw: string; json: Record<string, unknown>; context?: string }> {
  let raw = "";
  await runHook(event, JSON.stringify({ session_id: "s-test", hook_event_name: event, ...payload }), env, {
    io: { write: write ?? (async (t) => void (raw += t)) },
  });
  const json = raw.trim() ? (JSON.parse(raw) as Record<string, unknown>) : {};
  const context = (json.hookSpecificOutput as { additionalContext?: string } | undefined)?.additionalContext;
  return { raw, json, ...(context !== undefined ? { context } : {}) };
}

const managers = new WeakMap<TestMesh, Promise<JetStreamManager>>();

/**
 * Consumer info of a principal's DM durable (ack state), read over the mesh service's connection:
 * on a static mesh the streams live in the data account, which only the mesh service is in.
 */
export async function dmConsumerInfo(mesh: TestMesh, actor: string): Promise<ConsumerInfo> {
  let jsm = managers.get(mesh);
  if (!jsm) {
    jsm = jetstreamManager(mesh.serviceConnection);
    managers.set(mesh, jsm);
  }
  return (await jsm).consumers.info(`DM_${mesh.space}`, `dm_local-${actor}`);
}

// ---- fakes for pure inbox tests ----------------------------------------------------------

export interface FakeMail extends Mail {
  acked: number;
  naks: Array<number | undefined>;
  workings: number;
}

let fakeSeq = 0;

/** A settle-able fake delivery. */
export function fakeMail(
  kind: "dm" | "anycast" | "channel",
  text: string,
  opts: {
    id?: string;
    channel?: string;
    from?: string;
    source?: "live" | "durable" | "history";
    mentions?: string[];
    possibleRepeat?: boolean;
    parts?: Part[];
  } = {},
): FakeMail {
  const id = opts.id ?? `m${++fakeSeq}`;
  const from = opts.from ?? "alice";
  const message: CotalMessage = {
    id,
    ts: 1_700_000_000_000 + fakeSeq,
    space: "t",
    from: { id: `local.${from}`, name: from },
    ...(kind === "channel" ? { channel: opts.channel ?? "general" } : kind === "dm" ? { to: "local.bob" } : { toService: "reviewer" }),
    ...(opts.mentions ? { mentions: opts.mentions } : {}),
    parts: opts.parts ?? [{ kind: "text", text }],
  };
  const source = opts.source ?? "durable";
  const m: FakeMail = {
    message,
    kind,
    from: { owner: "local", actor: from },
    ...(kind === "channel" ? { channel: opts.channel ?? "general" } : {}),
    ...(kind === "anycast" ? { role: "reviewer" } : {}),
    source,
    historical: source === "history",
    possibleRepeat: opts.possibleRepeat ?? false,
    acked: 0,
    naks: [],
    workings: 0,
    async ack() {
      m.acked += 1;
    },
    nak(delayMs?: number) {
      m.naks.push(delayMs);
    },
    working() {
      m.workings += 1;
    },
  };
  return m;
}
