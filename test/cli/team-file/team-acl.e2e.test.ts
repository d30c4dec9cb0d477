// cotal.yaml's read and write lists, enforced by the broker (docs/team-file.md, Who may
// read and write): through the shipped CLI, `up -f` starts a seat that may read a channel but not
// post there. A raw NATS client holding that seat's own credential is refused the post by the
// server (a permissions violation) while it still receives the writer's posts; `cotal send` and an
// agent's cotal_send with it say so in a sentence. Widening the list replaces that seat with one
// whose credential may post; a second run changes nothing.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, credsAuthenticator, PermissionViolationError, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { Connector } from "../../../connector/internal.js";
import { parsePrincipal, patterns } from "../../../schemas/index.js";
import { call, mcpClient } from "../../connector/helpers.js";
import { cliFolder, freePort, pidAlive, type CliResult } from "../../harness/cli.js";
import { until } from "../../../testbed/until.js";

const { dir, cotal } = cliFolder("cotal-team-acl-", 120_000);
const FILE = join(dir, "cotal.yaml");
const SPACE = "team";
const teamFile = (write: string) => `space: ${SPACE}
channels:
  ops: { write: [${write}], read: [e2, e3] }
seats:
  e2: { agent: echo, channels: [ops] }
  e3: { agent: echo, channels: [ops] }
`;

const ok = (r: CliResult, what: string): CliResult => {
  expect(r.code, `${what}: exit code\nstdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
};

interface SeatJson {
  seat: string;
  name: string;
  uid: string;
  state: string;
  pid?: number;
}

async function seats(): Promise<Map<string, SeatJson>> {
  const r = ok(await cotal("ps", "--json"), "ps");
  return new Map(
    r
      .json<Array<{ seats?: SeatJson[] }>>()
      .flatMap((m) => m.seats ?? [])
      .map((s) => [s.name, s]),
  );
}

/** The credential file the manager minted for one incarnation (`<uid>.creds` in the seat's folder). */
function credsOf(s: SeatJson): string {
  const file = readdirSync(join(dir, ".cotal"), { recursive: true, encoding: "utf8" }).find((f) => f.endsWith(`${s.uid}.creds`));
  if (!file) throw new Error(`no credential file for ${s.name} (${s.uid}) under ${dir}/.cotal`);
  return join(dir, ".cotal", file);
}

/** A raw client on a seat's credential, and the permission errors the server sends it. */
async function rawClient(creds: string): Promise<{ nc: NatsConnection; refused: (subject: string) => Promise<boolean> }> {
  const server = ok(await cotal("status", "--json"), "status").json<{ server: string }>().server;
  const nc = await connect({ servers: server, authenticator: credsAuthenticator(readFileSync(creds)) });
  clients.push(nc);
  const seen: PermissionViolationError[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === "error" && s.error instanceof PermissionViolationError) seen.push(s.error);
  })();
  return {
    nc,
    // The server's -ERR follows the PUB; two round trips let the client hand it on first.
    refused: async (subject) => {
      await nc.flush();
      await nc.flush();
      return seen.some((e) => e.operation === "publish" && e.subject === subject);
    },
  };
}
const clients: NatsConnection[] = [];
afterAll(async () => {
  for (const nc of clients) await nc.close().catch(() => undefined);
});

describe("cotal.yaml: who may read and write a channel, enforced by the broker", () => {
  let port: number;
  let uids: Record<string, string>;

  it("--dry-run shows the read-only seat in the plan", async () => {
    writeFileSync(FILE, teamFile("e2"));
    port = await freePort();
    const r = ok(await cotal("up", "-f", "cotal.yaml", "--dry-run"), "up --dry-run");
    expect(r.stdout).toMatch(/\+ seat e3: start echo on ops, on .*; ops read-only/);
    expect(r.stdout).toMatch(/\+ seat e2: start echo on ops, on [^;]*\n/); // e2 has what joining gives
  }, 60_000);

  it("a seat that may read but not write: the broker refuses its post, it still receives the writer's", async () => {
    ok(await cotal("up", "-f", "cotal.yaml", "-d", "--port", String(port)), "up -f");
    const ps = await seats();
    expect([...ps.values()].map((s) => [s.name, s.state]).sort()).toEqual([
      ["e2", "joined"],
      ["e3", "joined"],
    ]);
    uids = Object.fromEntries([...ps.values()].map((s) => [s.name, s.uid]));
    const e3 = ps.get("e3")!;
    const e3Creds = credsOf(e3);

    // The raw client on e3's own credential: it may read ops, and is refused a post there.
    const raw = await rawClient(e3Creds);
    const got: string[] = [];
    raw.nc.subscribe(patterns.channelPosts(SPACE, "ops"), { callback: (_err, m) => void got.push(m.string()) });
    const post = patterns.postAs(SPACE, parsePrincipal(e3.seat), "ops");
    raw.nc.publish(post, "{}");
    expect(await raw.refused(post)).toBe(true);

    // Through the CLI: a sentence naming the subject and the broker, exit 5, nothing stored.
    const denied = await cotal("send", "msg", "ops", "from e3", "--creds", e3Creds);
    expect(denied.code, denied.stderr).toBe(5);
    expect(denied.stderr).toContain(`may not publish on ${post}: the broker refused it`);

    // The writer's post arrives, at e3's raw client and in the channel's history.
    ok(await cotal("send", "msg", "ops", "from e2", "--creds", credsOf(ps.get("e2")!)), "send as e2");
    await until(() => got.some((m) => m.includes("from e2")), 10_000, "e2's post to reach e3's raw client");
    const history = ok(await cotal("history", "ops", "--json", "--creds", e3Creds), "history as e3").stdout;
    expect(history).toContain("from e2");
    expect(history).not.toContain("from e3");
  }, 120_000);

  it("widening the write list replaces the read-only seat with one that may post; the writer is left alone", async () => {
    writeFileSync(FILE, teamFile("e2, e3"));
    const r = ok(await cotal("up", "-f", "cotal.yaml", "-d"), "up -f (e3 may write)");
    expect(r.stdout).toContain("~ seat e3: replace");
    expect(r.stdout).toContain("rights [ops read-only] → (none)");
    expect(r.stdout).toContain("= as declared: channels ops; seats e2");
    const ps = await seats();
    expect(ps.get("e2")?.uid).toBe(uids.e2);
    const e3 = ps.get("e3")!;
    expect(e3.uid).not.toBe(uids.e3);
    await until(async () => (await seats()).get("e3")?.state === "joined", 60_000, "the new e3 to join");
    ok(await cotal("send", "msg", "ops", "now from e3", "--creds", credsOf(e3)), "send as the new e3");
    expect(ok(await cotal("history", "ops", "--json"), "history").stdout).toContain("now from e3");
  }, 120_000);

  it("a second run changes nothing; narrowing the list again makes e3 read-only again", async () => {
    const again = ok(await cotal("up", "-f", "cotal.yaml", "-d"), "up -f (again)");
    expect(again.stdout).toContain("nothing to do");
    expect(again.stdout).not.toContain("done:");

    writeFileSync(FILE, teamFile("e2"));
    expect(ok(await cotal("up", "-f", "cotal.yaml", "-d"), "up -f (e3 read-only again)").stdout).toContain("rights (none) → [ops read-only]");
    const e3 = (await seats()).get("e3")!;
    const denied = await cotal("send", "msg", "ops", "e3 again", "--creds", credsOf(e3));
    expect(denied.code, denied.stderr).toBe(5);

    // The MCP path (an agent's cotal_send) on the same credential: a tool error naming the refusal.
    // The connector joins as e3 beside the seat (no channels, so no membership is shared); the mesh goes down next.
    const ctl = mkdtempSync(join(tmpdir(), "cotal-team-acl-ctl-"));
    const server = ok(await cotal("status", "--json"), "status").json<{ server: string }>().server;
    const connector = await Connector.start({
      env: { COTAL_CONTROL_DIR: ctl, COTAL_SPACE: SPACE, COTAL_NAME: "e3" },
      joinOn: "start",
      launch: { source: "env", server, space: SPACE, owner: "local", name: "e3", channels: [], creds: credsOf(e3) },
    });
    try {
      const m = await mcpClient(connector);
      const sent = await call(m.client, "cotal_send", { channel: "ops", text: "e3 by MCP" });
      expect(sent.isError, sent.text).toBe(true);
      expect(sent.text).toContain(`The broker refused to let this credential publish on ${patterns.postAs(SPACE, parsePrincipal(e3.seat), "ops")}`);
      await m.close();
    } finally {
      await connector.close("test over");
      rmSync(ctl, { recursive: true, force: true });
    }
  }, 120_000);

  it("cotal down leaves nothing running", async () => {
    const pids = [...(await seats()).values()].map((s) => s.pid!);
    ok(await cotal("down"), "down");
    await until(() => pids.every((p) => !pidAlive(p)), 20_000, "the seats' processes to end");
  }, 60_000);
});
