// Approvals from anywhere (docs/security.md, The approve right), through the shipped CLI on a real
// mesh, the real Claude Code against the model double: a supervised Claude seat asks to run a Bash
// command; `cotal approvals` as the person at the mesh host (no --as) lists it with its command;
// `cotal approve` lets it run, `cotal deny` keeps another from running; a person minted without
// the approve right is refused (exit 5) and the ask stays open; unanswered, the seat's ask is
// denied at its bound; every ask and answer is a frame on the seat's event plane.
import { existsSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findNatsServer, type OpenApproval } from "../../broker/index.js";
import { claudeEnv } from "../harness/claude-runner.js";
import { buildCli, exitedOk, freePort, runCotal, type CliResult } from "../harness/cli.js";
import { closeRuntimes } from "../harness/runtime-shell.js";
import { ModelDouble, newToolResults, newTurnText } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";

/** The bound of a managed seat's ask in this test: long enough for a few CLI calls, short enough to wait out once. */
const BOUND_MS = 25_000;

let project: string;
let messages: ModelDouble;
let shell: NodeJS.ProcessEnv;
const me = userInfo().username;
const cotal = (args: string[], timeoutMs = 120_000): Promise<CliResult> => runCotal(args, { cwd: project, env: shell, timeoutMs });
const ok = exitedOk;
const file = (n: string) => join(project, `made-${n}`);

type Ask = OpenApproval;

async function asks(): Promise<Ask[]> {
  return ok(await cotal(["approvals", "--json"])).json<Ask[]>();
}

/** Wait for the seat's ask to run `touch <file>` to be listed, and return it. */
async function askFor(target: string): Promise<Ask> {
  let found: Ask | undefined;
  await until(
    async () => {
      found = (await asks()).find((a) => a.input.command === `touch ${target}`);
      return found !== undefined;
    },
    180_000,
    `an open ask to run touch ${target}`,
    1_000,
  );
  return found!;
}

/** A Bash step: when the seat's newest turn says `word`, its model asks to touch the file. */
const touchOn = (word: string, target: string) => ({
  when: (r: Parameters<typeof newTurnText>[0]) => newTurnText(r).includes(word),
  reply: [{ tool: "Bash", input: { command: `touch ${target}`, description: `make ${word}` } }],
});
const afterBash = (text: string) => ({ afterToolResult: "Bash", reply: [text] });

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-approvals-"));
  // Steps play in order: the unattended seat's first (its test runs first).
  messages = await ModelDouble.start([
    touchOn("TOUCH-UNATTENDED", file("unattended")),
    afterBash("unattended handled"),
    touchOn("TOUCH-ONE", file("one")),
    afterBash("one handled"),
    touchOn("TOUCH-TWO", file("two")),
    afterBash("two handled"),
    touchOn("TOUCH-FOUR", file("four")),
    afterBash("four handled"),
    touchOn("TOUCH-THREE", file("three")),
    afterBash("three handled"),
  ]);
  shell = {
    ...claudeEnv({ baseUrl: messages.url, home: join(project, "home") }),
    NATS_SERVER_BIN: findNatsServer(),
    COTAL_SPACE: `approvals${process.pid}`,
    COTAL_APPROVAL_TIMEOUT_MS: String(BOUND_MS),
  };
  ok(await cotal(["up", "-d", "--port", String(await freePort())]));
  ok(await cotal(["mint", "carol", "--profile", "person"]));
  ok(await cotal(["mint", "erin", "--profile", "person", "--approve", "sup"]));
}, 180_000);

afterAll(() => closeRuntimes(project, () => cotal(["down"]), { messages }));

describe("a supervised Claude seat asks the mesh", () => {
  it("an unattended seat (the default) never asks: the call is refused by its allow-list and nothing is listed", async () => {
    const before = messages.requests.length;
    ok(await cotal(["spawn", "-d", "--name", "plain", "--prompt", "TOUCH-UNATTENDED", "--wait-ms", "240000", "--json"]));
    // Its allow-list does not name Bash: dontAsk refuses the call at once, and the refusal is the tool's result.
    await until(
      () => messages.requests.slice(before).some((r) => newToolResults(r).some((t) => t.name === "Bash" && t.isError)),
      180_000,
      "the refused call's result to reach the unattended seat's model",
      1_000,
    );
    expect(await asks()).toEqual([]);
    expect(existsSync(file("unattended"))).toBe(false);
    ok(await cotal(["stop", "--name", "plain"]));
  }, 400_000);

  it("the person approves one ask (it runs), denies another (it does not), a person without the right is refused, and an unanswered ask is denied at its bound", async () => {
    const seat = ok(await cotal(["spawn", "-d", "--name", "sup", "--posture", "supervised", "--prompt", "TOUCH-ONE", "--wait-ms", "240000", "--json"]));
    expect(seat.json(), seat.stdout).toMatchObject({ name: "sup" });

    // Listed as the person at the mesh host, with the command as Claude shows it.
    const one = await askFor(file("one"));
    expect(one).toMatchObject({
      seat: "local.sup",
      tool: "Bash",
      input: { command: `touch ${file("one")}`, description: "make TOUCH-ONE" },
      onExpiry: "denied",
    });
    expect(one.id).toMatch(/^ap-[a-z2-7]{10}$/);
    expect(existsSync(file("one"))).toBe(false);
    const table = ok(await cotal(["approvals"])).stdout;
    expect(table).toContain(one.id);
    expect(table).toContain(`touch ${file("one")} (make TOUCH-ONE)`);

    // carol is a person without the approve right: refused by the seat, and the ask stays open.
    const refused = await cotal(["deny", one.id, "--creds", join(project, ".cotal", "creds", "carol.creds")]);
    expect(refused.code, refused.stderr).toBe(5);
    expect(refused.stderr).toContain("not-allowed");
    expect((await asks()).map((a) => a.id)).toContain(one.id);
    expect(existsSync(file("one"))).toBe(false);

    // The person at the mesh host (approve *), no --as: it runs.
    expect(ok(await cotal(["approve", one.id])).stdout).toContain(`allowed ${one.id}: local.sup Bash touch ${file("one")}`);
    await until(() => existsSync(file("one")), 60_000, "the approved command to run");
    expect((await asks()).map((a) => a.id)).not.toContain(one.id);
    // Answered once: a second answer is told so.
    const again = await cotal(["approve", one.id]);
    expect(again.code, again.stderr).toBe(1);
    expect(again.stderr).toContain(`No open permission ask has the id ${one.id}`);

    // Another ask, denied: it does not run, and the model is told who denied it and why.
    ok(await cotal(["send", "dm", "sup", "TOUCH-TWO"]));
    const two = await askFor(file("two"));
    ok(await cotal(["deny", two.id, "--reason", "not today"]));
    await until(
      () => messages.requests.some((r) => newTurnText(r).includes(`local.${me} denied this over the mesh: "not today"`)),
      60_000,
      "the denial to reach the model",
    );
    expect(existsSync(file("two"))).toBe(false);

    // erin holds the approve right for sup (minted with --approve sup): she may answer it.
    ok(await cotal(["send", "dm", "sup", "TOUCH-FOUR"]));
    const four = await askFor(file("four"));
    ok(await cotal(["approve", four.id, "--creds", join(project, ".cotal", "creds", "erin.creds")]));
    await until(() => existsSync(file("four")), 60_000, "erin's approved command to run");

    // Nobody answers the third: at its bound the seat denies it, and it leaves the list.
    ok(await cotal(["send", "dm", "sup", "TOUCH-THREE"]));
    const three = await askFor(file("three"));
    await until(
      () => messages.requests.some((r) => newTurnText(r).includes(`Nobody answered this permission ask within ${BOUND_MS / 1000} s`)),
      BOUND_MS + 60_000,
      "the bound to deny the ask",
      1_000,
    );
    expect(existsSync(file("three"))).toBe(false);
    expect((await asks()).map((a) => a.id)).not.toContain(three.id);

    // Every ask and answer is a frame on the seat's event plane: who, what, when.
    const frames = ok(await cotal(["history", "events.local.sup", "--json"])).json<
      Array<{ message: { parts: Array<{ events?: Array<{ type: string; name?: string; value?: Record<string, unknown> }> }> } }>
    >();
    const custom = frames.flatMap((f) => f.message.parts.flatMap((p) => p.events ?? [])).filter((e) => e.type === "CUSTOM");
    const seen = custom.map((e) => [e.name, e.value?.id, e.value?.decision ?? e.value?.why ?? e.value?.outcome, e.value?.by]);
    expect(seen).toEqual(
      expect.arrayContaining([
        ["cotal.approval.asked", one.id, undefined, undefined],
        ["cotal.approval.refused", one.id, "not-allowed", "local.carol"],
        ["cotal.approval.answered", one.id, "allow", `local.${me}`],
        ["cotal.approval.answered", two.id, "deny", `local.${me}`],
        ["cotal.approval.answered", four.id, "allow", "local.erin"],
        ["cotal.approval.asked", three.id, undefined, undefined],
        ["cotal.approval.expired", three.id, "denied", undefined],
      ]),
    );
    ok(await cotal(["stop", "--name", "sup"]));
  }, 600_000);

  it("the approve right is a person's: minting another profile with it is refused, nothing minted", async () => {
    const r = await cotal(["mint", "frank", "--profile", "agent", "--approve", "sup"]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain("the approve right is a person's (--profile person), not an agent's");
    expect(existsSync(join(project, ".cotal", "creds", "frank.creds"))).toBe(false);
  });

  it("--posture supervised is refused for a runtime whose permission hook returns no decision", async () => {
    const r = await cotal(["spawn", "-d", "--agent", "gemini", "--name", "gm", "--posture", "supervised"]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain("--posture supervised needs a runtime whose permission hook returns a person's decision to the CLI: claude, codex");
  });
});
