// Approvals from anywhere for a Codex seat (docs/runtimes.md, Supervised posture), through the
// shipped CLI against the real codex (0.171.0) and the Responses double: a supervised Codex seat
// runs approval `on-request` in its sandbox; its model asks to run `touch <file>` outside the
// sandbox; Codex runs its PermissionRequest hook before any dialog, the connector puts the ask to
// the mesh, `cotal approvals --json` lists it as the person at the mesh host sees it, and the
// person's `cotal approve` makes Codex run it; a second ask, `cotal deny`, does not run, and the
// model gets the person's reason; a third, unanswered, is denied at the bound.
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpenApproval } from "../../broker/index.js";
import { functionOutputs, type FunctionCallItem, type RecordedResponsesRequest, type ResponsesDouble } from "../../testbed/responses-double.js";
import { exitedOk } from "../harness/cli.js";
import { CodexPath } from "../harness/codex-path.js";
import { seatScreen } from "../harness/seat-screen.js";
import { until } from "../../testbed/until.js";

/** The bound of the seat's asks in this test: long enough for a few CLI calls, short enough to wait out once. */
const BOUND_MS = 30_000;

let u: CodexPath;
let double: ResponsesDouble;
/** A folder outside the seat's workspace (its sandbox may not write there). */
let outside: string;

const cotal = (args: string[]) => u.cotal(args);
const ok = exitedOk;
const target = (n: string) => join(outside, `made-${n}`);
/** Codex's shell tool, asked to run outside the sandbox: with approval `on-request`, Codex asks first. */
const escalated = (cmd: string, callId: string): FunctionCallItem => ({
  tool: "exec_command",
  arguments: { cmd, sandbox_permissions: "require_escalated", justification: "the file is outside the workspace" },
  callId,
});
const hasInput = (r: RecordedResponsesRequest, word: string): boolean => JSON.stringify(r.body?.input ?? []).includes(word);
const outputOf = (callId: string): string | undefined =>
  double
    .turns()
    .flatMap((t) => functionOutputs(t))
    .find((o) => o.callId === callId)?.output;

/** Wait for the seat's ask to run `touch <file>` to be listed, and return it. */
async function askFor(file: string): Promise<OpenApproval> {
  let found: OpenApproval | undefined;
  await until(
    async () => {
      found = ok(await cotal(["approvals", "--json"]))
        .json<OpenApproval[]>()
        .find((a) => a.input.command?.includes(`touch ${file}`));
      return found !== undefined;
    },
    150_000,
    `an open ask to run touch ${file}`,
    1_000,
  );
  return found!;
}

beforeAll(async () => {
  u = await CodexPath.start({
    prefix: "cotal-codex-approvals-",
    key: "sk-codex-double",
    shell: { COTAL_SPACE: `cxap-${process.pid}`, COTAL_APPROVAL_TIMEOUT_MS: String(BOUND_MS) },
    timeoutMs: 150_000,
  });
  double = u.double;
  outside = await mkdtemp(join(tmpdir(), "cotal-codex-outside-"));
}, 120_000);

afterAll(async () => {
  await u?.close();
  if (outside) await rm(outside, { recursive: true, force: true });
});

describe("a supervised Codex seat asks the mesh", () => {
  it("the person approves one ask (it runs) and denies another (it does not; the model is told why); nobody answers a third, denied at the bound", async () => {
    double.push(
      { when: (r) => hasInput(r, "TOUCH-ONE") && functionOutputs(r).length === 0, reply: [escalated(`touch ${target("one")}`, "touch_one")] },
      { when: (r) => functionOutputs(r).some((o) => o.callId === "touch_one"), reply: ["one handled"] },
      {
        when: (r) => hasInput(r, "TOUCH-TWO") && !functionOutputs(r).some((o) => o.callId === "touch_two"),
        reply: [escalated(`touch ${target("two")}`, "touch_two")],
      },
      { when: (r) => functionOutputs(r).some((o) => o.callId === "touch_two") && !hasInput(r, "TOUCH-THREE"), reply: ["two handled"] },
      {
        when: (r) => hasInput(r, "TOUCH-THREE") && !functionOutputs(r).some((o) => o.callId === "touch_three"),
        reply: [escalated(`touch ${target("three")}`, "touch_three")],
      },
      { when: (r) => functionOutputs(r).some((o) => o.callId === "touch_three"), reply: ["three handled"] },
    );
    ok(await cotal(["spawn", "-d", "--agent", "codex", "--name", "cx", "--posture", "supervised", "--wait-ms", "120000"]));
    // ps shows Codex's own posture for it.
    expect(ok(await cotal(["ps"])).stdout).toMatch(/cx\s+codex\s+joined\s.*approval on-request, sandbox workspace-write/);

    ok(await cotal(["send", "dm", "cx", "TOUCH-ONE please", "--as", "alice", "--impersonate"]));
    const one = await askFor(target("one"));
    expect(one).toMatchObject({ seat: "local.cx", onExpiry: "denied" });
    expect(existsSync(target("one"))).toBe(false);
    // Codex runs the hook before its dialog: the seat's terminal shows the hook running, no dialog.
    const screen = await seatScreen(u.project, u.shell.COTAL_SPACE!, "cx");
    expect(screen).toContain("Running hook");
    expect(screen).not.toMatch(/Would you like to run the following command\?/);
    ok(await cotal(["approve", one.id]));
    await until(() => existsSync(target("one")), 60_000, "the approved command to run");
    await until(() => outputOf("touch_one") !== undefined, 60_000, "the approved command's output to reach the model", 250);

    ok(await cotal(["send", "dm", "cx", "TOUCH-TWO please", "--as", "alice", "--impersonate"]));
    const two = await askFor(target("two"));
    ok(await cotal(["deny", two.id, "--reason", "not today"]));
    await until(() => outputOf("touch_two") !== undefined, 60_000, "the denied command's result to reach the model", 250);
    // Codex reports the hook's denial as the call's failure, the message quoted inside (0.171.0).
    expect(outputOf("touch_two")).toMatch(/^exec_command failed: .*Rejected\(.*local\.\w+ denied this over the mesh: .*not today/);
    expect(existsSync(target("two"))).toBe(false);

    ok(await cotal(["send", "dm", "cx", "TOUCH-THREE please", "--as", "alice", "--impersonate"]));
    await askFor(target("three"));
    await until(() => outputOf("touch_three") !== undefined, BOUND_MS + 60_000, "the bound to deny the unanswered ask", 500);
    expect(outputOf("touch_three")).toContain("Nobody answered this permission ask within 30 s");
    expect(existsSync(target("three"))).toBe(false);
    expect(ok(await cotal(["approvals", "--json"])).json<OpenApproval[]>()).toEqual([]);
    ok(await cotal(["stop", "--name", "cx"]));
  }, 480_000);
});
