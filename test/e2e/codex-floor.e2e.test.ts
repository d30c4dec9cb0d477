// The deny floor holds for Codex, through the shipped CLI against the real codex:
// Codex has no rule syntax for it, so Cotal puts the floor in a PreToolUse hook on its shell tool
// (the connector's hook command with --deny-floor, trusted in the launch's private home). A
// `cotal run` with a Codex persona whose model asks for every destructive command Claude's rules
// refuse (test/harness/deny-floor-cases.ts) gets each refused, with the floor's reason in the
// function_call_output the model receives, while a harmless command runs. Commands that would
// leave a marker file before the destructive part prove nothing of them ran: Codex itself lets
// `git push --force`, `git reset --hard` and `sudo` run (it refuses only `rm -f`-style commands
// when it may not ask, seen on 0.171.0), so without the hook the markers appear. A managed Codex
// seat (bob, woken by a DM) holds the floor the same way; `ps` names where it is.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunReply } from "../../schemas/index.js";
import { functionOutputs, inputTexts, type FunctionCallItem, type RecordedResponsesRequest, type ResponsesDouble } from "../../testbed/responses-double.js";
import { exitedOk } from "../harness/cli.js";
import { CodexPath } from "../harness/codex-path.js";
import { DESTRUCTIVE } from "../harness/deny-floor-cases.js";
import { until } from "../../testbed/until.js";

let u: CodexPath;
let double: ResponsesDouble;
let victim: string;

const cotal = (args: string[]) => u.cotal(args);
const ok = exitedOk;
/** A call of Codex's shell tool. */
const shell = (cmd: string, callId: string): FunctionCallItem => ({ tool: "exec_command", arguments: { cmd }, callId });
/** What Codex says back for a command its PreToolUse hook refused (0.171.0), with the floor's reason. */
const REFUSED = /^Command blocked by PreToolUse hook: Cotal's deny floor refuses this command: it matches `[^`]+`, a destructive command/;
/** Destructive commands Codex itself would run, each after a marker that shows whether anything of it ran. */
const MARKED = ["touch marker-push && git push --force origin main", "touch marker-reset && git reset --hard", "touch marker-sudo; sudo true"];
const outputsOf = (r: RecordedResponsesRequest): Map<string, string> => new Map(functionOutputs(r).map((o) => [o.callId ?? "", o.output]));

beforeAll(async () => {
  u = await CodexPath.start({ prefix: "cotal-codex-floor-", key: "sk-codex-double", shell: { COTAL_SPACE: `cxfl-${process.pid}` }, timeoutMs: 150_000 });
  double = u.double;
  victim = join(u.project, "victim");
  mkdirSync(victim);
  writeFileSync(join(victim, "keep.txt"), "still here\n");
  mkdirSync(join(u.project, ".cotal", "agents"), { recursive: true });
  writeFileSync(join(u.project, ".cotal", "agents", "coder.md"), ["---", "name: coder", "runtime: codex", "---", "You are a coder.", ""].join("\n"));
}, 120_000);

afterAll(async () => {
  await u?.close();
});

describe("the deny floor in a Codex PreToolUse hook", () => {
  it("a cotal run: every destructive shell command is refused with the floor's reason, a harmless one runs", async () => {
    const calls = DESTRUCTIVE.map((cmd, i) => shell(cmd, `floor_${i}`));
    const marked = MARKED.map((cmd, i) => shell(cmd, `marked_${i}`));
    double.push(
      {
        when: (r) => inputTexts(r).some((t) => t.includes("FLOOR-RUN")),
        reply: [...calls, ...marked, shell("touch floor-ok && echo floor-control", "floor_ok")],
      },
      { when: (r) => functionOutputs(r).length > 0, reply: ["refused, as expected"] },
    );
    const r = await cotal(["run", "coder", "--prompt", "FLOOR-RUN clean up everything", "--json"]);
    expect(r.json<RunReply>().results[0], `${r.stdout}\n${r.stderr}`).toMatchObject({ status: "ok", output: "refused, as expected" });
    const answered = double.turns().find((t) => functionOutputs(t).some((o) => o.callId === "floor_ok"));
    expect(answered, "the run's model got its calls' outputs").toBeDefined();
    // Nothing of a refused command ran: its marker is absent, the folder it aims at is whole.
    for (const m of ["marker-push", "marker-reset", "marker-sudo"]) expect(existsSync(join(u.project, m)), `${m}: its command ran`).toBe(false);
    expect(readdirSync(victim)).toEqual(["keep.txt"]);
    const out = outputsOf(answered!);
    DESTRUCTIVE.forEach((cmd, i) => {
      expect(out.get(`floor_${i}`), cmd).toMatch(REFUSED);
      expect(out.get(`floor_${i}`), cmd).toContain(`Command: ${cmd}`);
    });
    MARKED.forEach((cmd, i) => expect(out.get(`marked_${i}`), cmd).toMatch(REFUSED));
    expect(out.get("floor_ok")).toContain("floor-control");
    expect(out.get("floor_ok")).not.toContain("blocked");
    expect(existsSync(join(u.project, "floor-ok"))).toBe(true);
  }, 180_000);

  it("a managed seat: bob's woken turn has its destructive commands refused and a harmless one run; ps names the floor's hook", async () => {
    ok(await cotal(["spawn", "-d", "--agent", "codex", "--name", "bob", "--wait-ms", "120000"]));
    const seatCalls = [
      shell(`echo tidy && rm -rf ${victim}`, "seat_rm"),
      shell(`touch ${join(u.project, "seat-marker")} && git push --force origin main`, "seat_push"),
    ];
    double.push(
      {
        when: (r) => JSON.stringify(r.body?.input ?? []).includes("FLOOR-SEAT") && functionOutputs(r).length === 0,
        reply: [...seatCalls, shell(`touch ${join(u.project, "seat-ok")}`, "seat_ok")],
      },
      { when: (r) => functionOutputs(r).some((o) => o.callId === "seat_ok"), reply: ["done"] },
    );
    ok(await cotal(["send", "dm", "bob", "FLOOR-SEAT please tidy up", "--as", "alice", "--impersonate"]));
    let answered: RecordedResponsesRequest | undefined;
    await until(
      () => (answered = double.turns().find((t) => functionOutputs(t).some((o) => o.callId === "seat_ok"))) !== undefined,
      150_000,
      "bob's shell calls to come back to his model",
      500,
    );
    expect(existsSync(join(u.project, "seat-marker")), "the refused command ran").toBe(false);
    const out = outputsOf(answered!);
    for (const c of seatCalls) expect(out.get(c.callId!), String(c.arguments!.cmd)).toMatch(REFUSED);
    expect(out.get("seat_ok")).not.toContain("blocked");
    expect(existsSync(join(u.project, "seat-ok"))).toBe(true);
    expect(readdirSync(victim)).toEqual(["keep.txt"]);
    // cotal status's roster names bob's runtime, as cotal roster does.
    expect(ok(await cotal(["status"])).stdout).toMatch(/^\s+NAME\s+ROLE\s+RUNTIME\s+STATUS\s+ACTIVITY\s+SEEN\n(?:.*\n)*\s+bob\s+-\s+codex\s+/m);
    // ps names where a Codex seat's floor is: in a hook on the shell tool, not the CLI's own rules.
    expect(ok(await cotal(["ps"])).stdout).toMatch(/bob\s+codex\s+joined\s.*approval never, sandbox workspace-write \(.*deny floor: Bash hook only;/);
  }, 360_000);
});
