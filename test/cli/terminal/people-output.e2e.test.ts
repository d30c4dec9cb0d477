// Logs and errors for people, through the built CLI on a default (secure) mesh: `cotal logs`
// prints human lines (time, level, component, message, fields; control characters escaped) with
// --format human and one JSON object per line when piped or with --json; a command's error is
// said once on stderr, not as a JSON log line and then the sentence.
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { freePort, type CliResult, cliFolder } from "../../harness/cli.js";

const { dir: project, cotal } = cliFolder("cotal-people-", 30_000);
const ok = (r: CliResult, what: string) => expect(r.code, `${what}: exit code; stderr: ${r.stderr}`).toBe(0);
// eslint-disable-next-line no-control-regex -- the point: no raw control character reaches the terminal
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/;

beforeAll(async () => {
  ok(await cotal("up", "-d", "--port", String(await freePort())), "up -d");
  ok(await cotal("mint", "gina", "--profile", "agent", "--allow-subscribe", "general", "--allow-publish", "general", "--provision"), "mint gina");
}, 90_000);

describe("cotal logs", () => {
  it("--format human prints time, level, component, message and fields, with a peer's control characters escaped", async () => {
    // A record as the mesh service writes one, quoting a peer's name and text (JSON escapes, raw once parsed).
    const rec = {
      level: 40,
      time: Date.now(),
      pid: 1,
      component: "mesh-service",
      space: "default",
      who: "local.\u001b[31mevil",
      msg: "refused \u009b2J\u202eokay",
    };
    appendFileSync(join(project, ".cotal", "logs", "mesh-service.log"), JSON.stringify(rec) + "\n");
    const human = await cotal("logs", "mesh-service", "--lines", "1", "--format", "human");
    ok(human, "logs --format human");
    expect(human.stdout).not.toMatch(RAW_CONTROL);
    expect(human.stdout.trimEnd()).toMatch(
      /^\d\d:\d\d:\d\d {2}warning {2}mesh-service {2}refused \\u009b2J\\u202eokay {2}space=default {2}who="local\.\\u001b\[31mevil"$/,
    );
    const nats = await cotal("logs", "nats-server", "--lines", "1", "--format", "human");
    ok(nats, "logs nats-server --format human");
    expect(nats.stdout.trimEnd()).toMatch(/^\d\d:\d\d:\d\d {2}(info|warning|error|debug) +nats-server {2}\S/);
    const all = await cotal("logs", "--lines", "2", "--format", "human");
    expect(all.stdout).toMatch(/^mesh-service \| \d\d:\d\d:\d\d {2}warning {2}mesh-service {2}refused/m);
    expect(all.stdout).toMatch(/^nats-server \| \d\d:\d\d:\d\d {2}\w+ +nats-server /m);
  });

  it("piped (or with --json) it prints one pino-shaped JSON object per line, naming the log each came from", async () => {
    for (const args of [[], ["--json"], ["--format", "json"]]) {
      const r = await cotal("logs", "--lines", "3", ...args);
      ok(r, `logs ${args.join(" ")}`);
      const lines = r.stdout.trimEnd().split("\n");
      expect(lines.length).toBeGreaterThanOrEqual(3);
      const parsed = lines.map((l) => JSON.parse(l) as { log: string; level: number; msg: string; time?: number });
      expect(new Set(parsed.map((p) => p.log))).toEqual(new Set(["nats-server", "mesh-service", "manager"]));
      for (const p of parsed) expect(typeof p.level).toBe("number");
      expect(r.stdout).not.toMatch(RAW_CONTROL);
    }
    const bad = await cotal("logs", "--format", "yaml");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--format: use human or json");
  });
});

describe("a command's error", () => {
  it("is said once on stderr, piped or as text: the broker's refusal is not also a JSON log line", async () => {
    const creds = join(project, ".cotal", "creds", "gina.creds");
    for (const format of [[], ["--log-format", "text"]]) {
      const r = await cotal("send", "msg", "secret", "hi", "--creds", creds, ...format);
      expect(r.code, r.stderr).toBe(5);
      const lines = r.stderr.trimEnd().split("\n");
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(/^cotal: The agent credential of local\.gina may not publish on cotal\.default\.chat\.local\.gina\.secret/);
    }
  });
});
