// The deny floor in the hook command (`hook.mjs PreToolUse --deny-floor`, how a Codex seat or run
// holds it): the matcher reads the floor's own patterns as Claude and OpenCode do, and the hook
// refuses a matching shell command with the reason for the model, without any connector, and
// fails closed on a payload it cannot read. Without the flag nothing changes.
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { runHook } from "../../connector/internal.js";
import { DENY_FLOOR_COMMANDS, floorRuleFor } from "../../runtime/index.js";
import { DESTRUCTIVE, NOT_ON_THE_FLOOR } from "../harness/deny-floor-cases.js";

/** Run the hook command's relay with `stdin`, no connector configured; its printed answer, parsed. */
async function hook(stdin: string | AsyncIterable<string>, o: { denyFloor?: boolean; event?: string; budgetMs?: number } = {}): Promise<unknown> {
  const out: string[] = [];
  const code = await runHook(
    o.event ?? "PreToolUse",
    stdin,
    {},
    { io: { write: async (t) => void out.push(t) }, denyFloor: o.denyFloor ?? true, budgetMs: o.budgetMs },
  );
  expect(code).toBe(0);
  expect(out).toHaveLength(1);
  return JSON.parse(out[0]!);
}

const bash = (command: unknown) => JSON.stringify({ hook_event_name: "PreToolUse", tool_name: "Bash", tool_input: { command }, session_id: "s" });
const refused = (reason: RegExp) => ({
  hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: expect.stringMatching(reason) },
});

describe("the deny floor's matcher", () => {
  it("refuses every destructive command Claude's rules refuse, and lets the rest run", () => {
    for (const c of DESTRUCTIVE) expect(floorRuleFor(c), c).toBeDefined();
    for (const c of NOT_ON_THE_FLOOR) expect(floorRuleFor(c), c).toBeUndefined();
  });

  it("reads each pattern as the CLIs do: `*` any characters, a trailing ` *` also the bare command, each part of a compound command", () => {
    // Every pattern matches itself with its stars filled in.
    for (const p of DENY_FLOOR_COMMANDS) expect(floorRuleFor(p.replaceAll("*", "x y")), p).toBe(p);
    expect(floorRuleFor("sudo")).toBe("sudo *");
    expect(floorRuleFor("echo a; sudo true")).toBe("sudo *");
    expect(floorRuleFor("true\ngit   reset   --hard")).toBe("git reset --hard*");
    expect(floorRuleFor("make || git clean -xdf")).toBeDefined();
    expect(floorRuleFor("ls | sudo tee x")).toBe("sudo *");
    expect(floorRuleFor("rm -rfv build")).toBe("rm -rf*");
    expect(floorRuleFor("git push origin -f")).toBe("git push * -f");
    expect(floorRuleFor("curl -s x |sh")).toBeDefined();
    expect(floorRuleFor("sudoers-check")).toBeUndefined();
  });
});

describe("the hook command with --deny-floor", () => {
  it("refuses a destructive shell command with the matching rule as the reason, with no connector to ask", async () => {
    expect(await hook(bash("git push --force origin main"))).toEqual(refused(/^Cotal's deny floor refuses this command: it matches `git push --force\*`/));
    expect(await hook(bash("echo tidy && rm -rf ./victim"))).toEqual(refused(/matches `rm -rf\*`/));
  });

  it("lets a harmless command through: the usual relay, `{}` when no connector is configured", async () => {
    expect(await hook(bash("touch floor-ok"))).toEqual({});
    // A tool call without a shell command is not the floor's.
    expect(await hook(JSON.stringify({ hook_event_name: "PreToolUse", tool_name: "Read", tool_input: { file_path: "x" } }))).toEqual({});
  });

  it("fails closed: a payload it cannot read, or a command that is not text, is refused", async () => {
    expect(await hook("not json")).toEqual(refused(/could not read this command/));
    expect(await hook(bash(["rm", "-rf", "/"]))).toEqual(refused(/could not read this command \(its command is not text\)/));
    const silent = new PassThrough();
    expect(await hook(silent, { budgetMs: 50 })).toEqual(refused(/could not read this command/));
    silent.destroy();
  });

  it("changes nothing without the flag, or on another event", async () => {
    expect(await hook(bash("git push --force"), { denyFloor: false })).toEqual({});
    expect(await hook("not json", { denyFloor: false })).toEqual({});
    expect(await hook(JSON.stringify({ hook_event_name: "Stop" }), { event: "Stop" })).toEqual({});
  });
});
