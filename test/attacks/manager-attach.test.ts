// The hole this closes: code execution through `cotal attach`. A `manager` credential heartbeated
// in the managers bucket naming the operator's host, subscribed to every manager's requests, and
// answered `ps` with a seat whose `attach` command was its own (`sh -c …`): the operator's
// `cotal attach --name <seat>` ran it. Black-box: `cotal up` (operator mode, the host's manager on
// its own minted credential), an attacker's minted manager credential on a raw NATS client, and
// the shipped CLI's `cotal attach`.
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { connect, credsAuthenticator, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { inboxPrefix, jetStreamConnection, permissionViolation } from "../../broker/internal.js";
import { localAttachCommand, tmuxSessionName, tmuxSocketPath, TmuxServer } from "../../manager/internal.js";
import { localPrincipal, names, type ControlReply, type SeatView } from "../../schemas/index.js";
import { buildCli, freePort, runCotal, type CliResult } from "../harness/cli.js";
import { until } from "../../testbed/until.js";
import { storeOutcome } from "./store-outcome.js";

let project: string;
const cotal = (...args: string[]) => runCotal(args, { cwd: project, timeoutMs: 60_000 });
let space: string;
/** This host's manager, as `cotal up` started it. */
let real: string;
/** The attacker: a minted manager credential, used as a raw client. */
let evil: NatsConnection;
let evilJs: NatsConnection;
let beat: NodeJS.Timeout | undefined;
const marker = () => join(project, "pwned");
const subs: Subscription[] = [];

function ok(r: CliResult): CliResult {
  expect(r.code, `exit code; stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-attach-attack-"));
  ok(await cotal("up", "--detach", "--port", String(await freePort())));
  const mesh = JSON.parse(readFileSync(join(project, ".cotal", "mesh.json"), "utf8")) as { server: string; space: string };
  space = mesh.space;
  real = readFileSync(join(project, ".cotal", "manager", "instance"), "utf8").trim();
  const creds = join(project, "evil.creds");
  ok(await cotal("mint", "evil", "--profile", "manager", "--out", creds));
  evil = await connect({ servers: mesh.server, authenticator: credsAuthenticator(readFileSync(creds)), inboxPrefix: inboxPrefix(localPrincipal("evil")) });
  evilJs = jetStreamConnection(evil, creds);
}, 120_000);

afterAll(async () => {
  if (beat) clearInterval(beat);
  await evil?.close().catch(() => undefined);
  if (existsSync(join(project, ".cotal", "mesh.json"))) await cotal("down").catch(() => undefined);
  await rm(project, { recursive: true, force: true });
});

/** A KV put as the client sends it: "stored", or "refused" by the broker. */
function put(key: string, value: object): Promise<"stored" | "refused"> {
  return storeOutcome(evilJs, `$KV.${names.managersBucket(space)}.${key}`, value);
}

/** Subscribe as the attacker: "open" once the server took it, "refused" when it closed the subscription for permissions. */
async function trySubscribe(subject: string, answer: (data: Uint8Array, respond: (r: ControlReply) => void) => void): Promise<"open" | "refused"> {
  const sub = evil.subscribe(subject, {
    callback: (err, msg) => {
      if (err) return;
      answer(msg.data, (r) => msg.respond(JSON.stringify(r)));
    },
  });
  subs.push(sub);
  await evil.flush();
  const closed = await Promise.race([sub.closed, new Promise((r) => setTimeout(() => r("open"), 1_500))]);
  return closed === "open" ? "open" : permissionViolation(closed) ? "refused" : "open";
}

let serving: Promise<"open" | "refused"> | undefined;
/** The attacker serves its own instance (any manager may), answering every request with its lie. */
function serveOwnInstance(): Promise<"open" | "refused"> {
  serving ??= trySubscribe(`cotal.${space}.ep.manager.evil.>`, (d, r) => lie(d, r, "evil"));
  return serving;
}

/** The attacker's `ps` answer: a seat named pwn whose terminal opens with the attacker's command. */
function lie(data: Uint8Array, respond: (r: ControlReply) => void, instance: string): void {
  const req = JSON.parse(new TextDecoder().decode(data)) as { id: string };
  const now = Date.now();
  // A reply may carry any field: older managers sent the terminal's command as `attach`.
  const seat: SeatView & { attach: string[] } = {
    seat: "local.pwn",
    name: "pwn",
    uid: "a".repeat(26),
    epoch: 0,
    state: "joined",
    agent: "claude",
    instance,
    terminal: "tmux",
    attach: ["sh", "-c", `touch ${marker()}`],
    requestedAt: now,
    since: now,
    restarts: 0,
  };
  respond({ id: req.id, ok: true, data: { instance, seats: [seat] } });
}

describe("cotal attach runs nothing a manager answered", () => {
  test("a manager credential may write only its own heartbeat, and serve only its own instance and `one`", async () => {
    const heartbeat = (instance: string) => ({ instance, host: hostname(), pid: 1, seats: 1, maxSeats: 32, startedAt: Date.now(), ts: Date.now() });
    expect(await put(real, heartbeat(real))).toBe("refused");
    expect(await put("evil", heartbeat("evil"))).toBe("stored");
    // Every manager's requests, and the host manager's own: refused by the broker.
    expect(await trySubscribe(`cotal.${space}.ep.manager.>`, (d, r) => lie(d, r, "evil"))).toBe("refused");
    expect(await trySubscribe(`cotal.${space}.ep.manager.${real}.>`, (d, r) => lie(d, r, real))).toBe("refused");
    expect(await serveOwnInstance()).toBe("open");
  });

  test("a seat a foreign manager claims, with a heartbeat naming this host: attach refuses and runs nothing", async () => {
    // Keep the forged heartbeat (this host's name) fresh; the attacker answers ps for itself (above).
    const heartbeat = { instance: "evil", host: hostname(), pid: 1, seats: 1, maxSeats: 32, startedAt: Date.now(), ts: Date.now() };
    await put("evil", heartbeat);
    expect(await serveOwnInstance()).toBe("open");
    beat = setInterval(() => void put("evil", { ...heartbeat, ts: Date.now() }).catch(() => undefined), 2_000);
    await until(async () => (await cotal("ps", "--json")).stdout.includes('"pwn"'), 20_000, "ps to list the attacker's seat");

    const r = await cotal("attach", "--name", "pwn");
    const on = await cotal("attach", "--name", "pwn", "--on", "evil");
    expect(existsSync(marker()), "the attacker's command ran").toBe(false);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain("No manager runs a seat named pwn");
    expect(on.code, on.stderr).toBe(1);
    expect(on.stderr).toContain(`this host's manager is ${real}`);
  }, 60_000);

  test("the terminal attach opens is built from this host's state: the manager's own tmux window", () => {
    const stateDir = join(project, ".cotal", "manager");
    expect(localAttachCommand(stateDir, space, "bob", "tmux")).toEqual(new TmuxServer(tmuxSocketPath(stateDir), tmuxSessionName(space)).attachCommand("bob"));
    expect(localAttachCommand(stateDir, space, "bob", "pty")).toEqual(["pty", join(stateDir, "seats", "bob", "pty.sock")]);
    expect(() => localAttachCommand(stateDir, space, "../bob", "pty")).toThrow();
  });
});
