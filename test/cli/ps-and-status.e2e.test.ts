// `ps` and `status` on the user's path, through the built CLI on a default
// (secure) mesh: `ps` with an observer credential lists the seats (docs/manager.md says it may
// read), and `status --server` pointed at an HTTP port says what answered there, at once.
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { BUNDLES } from "../harness/build.js";
import { cleanEnv, CotalProcess, freePort, runCotal, type CliResult, cliFolder } from "../harness/cli.js";
import { until } from "../../testbed/until.js";

const { dir: project, cotal } = cliFolder("cotal-breaks-", 30_000);
const ok = (r: CliResult, what: string) => expect(r.code, `${what}: exit code; stderr: ${r.stderr}`).toBe(0);

beforeAll(async () => {
  ok(await cotal("up", "-d", "--port", String(await freePort())), "up -d");
}, 90_000);

describe("ps and status", () => {
  it("ps with an observer credential lists the managers' seats", async () => {
    ok(await cotal("mint", "olga", "--profile", "observer"), "mint olga");
    ok(await cotal("spawn", "--agent", "echo", "--name", "echo1", "-d"), "spawn echo1");
    const ps = await cotal("ps", "--json", "--creds", join(project, ".cotal", "creds", "olga.creds"));
    ok(ps, "ps as the observer");
    expect(JSON.stringify(ps.json())).toContain('"echo1"');
  }, 90_000);

  it("status --server at an HTTP port says an HTTP server answered, not a NATS server, and exits 3 without the 20 s connect wait", async () => {
    const http: Server = createServer((_, res) => res.end("hello"));
    await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
    try {
      const port = (http.address() as AddressInfo).port;
      // The CLI's own connect would wait 20 s for a NATS greeting: a 10 s limit fails the old path.
      const r = await runCotal(["status", "--server", `127.0.0.1:${port}`, "--space", "default"], { cwd: tmpdir(), timeoutMs: 10_000 });
      expect(r.code, r.stderr).toBe(3);
      expect(r.stdout).toMatch(/NOT reachable: an HTTP server \(HTTP\/1\.1 200 OK\) answered there, not a NATS server/);
      expect(r.stdout).not.toContain("Start it with `cotal up`");
    } finally {
      http.close();
    }
  }, 30_000);

  it("send dm while the mesh service hangs is stored and answered at once, its receipt saying the recipient's status is unknown", async () => {
    const service = (JSON.parse(readFileSync(join(project, ".cotal", "run", "mesh-service.json"), "utf8")) as { pid: number }).pid;
    process.kill(service, "SIGSTOP"); // alive but not answering: the control call would wait its 10 s
    try {
      // The DM is stored by JetStream, which needs no mesh service; only the receipt's roster read does.
      const r = await runCotal(["send", "dm", "bob", "still there?", "--as", "alice", "--impersonate", "--json"], { cwd: project, timeoutMs: 6_000 });
      ok(r, "send dm");
      expect(r.json<{ text: string }>().text).toMatch(/^stored seq \d+; recipient status unknown at send \(the mesh service did not answer\)/);
    } finally {
      process.kill(service, "SIGCONT");
    }
    const pending = await cotal("deliver", "pending", "bob", "--json");
    ok(pending, "deliver pending bob");
    expect(pending.json<{ pending: number }>().pending).toBe(1); // stored, waiting for bob
  }, 30_000);

  it("spawn --agent echo --resume ID --on I is refused first (exit 2), with nothing carried", async () => {
    const session = "0b6c8a5e-7d3f-4c1a-9e2b-5f4d3c2b1a09";
    const config = join(project, "claude-config");
    mkdirSync(join(config, "projects", "-work"), { recursive: true });
    writeFileSync(join(config, "projects", "-work", `${session}.jsonl`), '{"type":"user","message":{"role":"user","content":"hi"}}\n'.repeat(2_000));
    const instance = (await cotal("status", "--json")).json<{ managers: Array<{ instance: string }> }>().managers[0]!.instance;
    const r = await runCotal(["spawn", "--agent", "echo", "--resume", session, "--on", instance, "-d"], {
      cwd: project,
      env: cleanEnv({ CLAUDE_CONFIG_DIR: config }),
    });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain("--resume carries a Claude session: an echo seat cannot resume one; nothing was uploaded or started.");
    expect(r.stdout).not.toMatch(/carried/);
  }, 30_000);

  it("the console prints a seat's unread count as the docs show it, 0 included, and the count after a DM", async () => {
    ok(await cotal("mint", "cora", "--profile", "agent", "--provision"), "mint cora");
    const ctl = join(project, "ctl");
    mkdirSync(ctl, { mode: 0o700 });
    const server = (JSON.parse(readFileSync(join(project, ".cotal", "mesh.json"), "utf8")) as { server: string }).server;
    // The shipped connector, as a Claude session starts it (joined at once: no session sends hooks here).
    const connector = spawn(process.execPath, [BUNDLES.connector], {
      env: cleanEnv({
        COTAL_SERVER: server,
        COTAL_SPACE: "default",
        COTAL_CREDS: join(project, ".cotal", "creds", "cora.creds"),
        COTAL_JOIN_ON: "start",
        COTAL_CONTROL_DIR: ctl,
      }),
      stdio: ["pipe", "ignore", "pipe"],
    });
    let connectorLog = "";
    connector.stderr!.setEncoding("utf8").on("data", (c: string) => (connectorLog += c));
    const watch = CotalProcess.spawn(["console", "--plain"], { cwd: project });
    // What the console and the connector said by the time a wait gave up.
    const seen = () =>
      `${watch.lines.join("\n")}\nconsole (exit ${watch.child.exitCode}) stderr: ${watch.stderr}\nconnector (exit ${connector.exitCode}): ${connectorLog}`;
    try {
      await until(
        () => watch.lines.some((l) => /^roster cora idle, 0 unread, since \d\d:\d\d:\d\d$/.test(l)),
        30_000,
        () => `cora with 0 unread\n${seen()}`,
      );
      ok(await cotal("send", "dm", "cora", "hello", "--as", "alice", "--impersonate"), "send dm cora");
      await until(
        () => watch.lines.some((l) => /^roster cora idle, 1 unread/.test(l)),
        30_000,
        () => `cora with 1 unread\n${seen()}`,
      );
    } finally {
      await watch.stop("SIGINT");
      connector.kill("SIGTERM");
      await new Promise((r) => connector.once("exit", r));
    }
  }, 90_000);
});
