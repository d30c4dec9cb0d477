// A seat's approval desk (docs/security.md, The approve right): who may answer its asks, the wire
// schemas of the answer and the frames, what the hook returns to Claude, and the desk itself on a
// real nats-server: an answer by the owner or the operator settles the ask; one by a principal
// without the right, for an unknown id, a second answer and a late one are refused with their code,
// and every step is a frame; a read of the frames folds into the open asks.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerApproval, logger, OpenApprovalSet, approvalEventsOf } from "../../broker/internal.js";
import { ApprovalDesk, askInputOf, folderPerson, newAskId, permissionDecision, cliFacetOf, trimPayload } from "../../connector/internal.js";
import {
  APPROVAL_EVENTS,
  ApprovalAnswer,
  ApprovalAsked,
  approveAs,
  approveInbox,
  approveSubject,
  mayApprove,
  OPERATOR_PRINCIPAL,
  parseApproveSubject,
  subjectMatches,
  type AgUiFrame,
} from "../../schemas/index.js";
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NatsServer, until } from "../harness/fixtures.js";

const seat = { owner: "local", actor: "sup" };
const pat = { owner: "local", actor: "pat" };
const carol = { owner: "local", actor: "carol" };

describe("who may answer a seat's asks", () => {
  it("the operator, the seat's owner, and a name whose approve right names the seat's actor, its id or *; nobody else", () => {
    const o = { operator: OPERATOR_PRINCIPAL };
    expect(mayApprove(OPERATOR_PRINCIPAL, seat, o)).toBe(true);
    expect(mayApprove(pat, seat, { ...o, owner: "local.pat" })).toBe(true);
    expect(mayApprove(carol, seat, { ...o, owner: "local.pat" })).toBe(false);
    expect(mayApprove(carol, seat, { ...o, approve: ["sup"] })).toBe(true);
    expect(mayApprove(carol, seat, { ...o, approve: ["local.sup"] })).toBe(true);
    expect(mayApprove(carol, seat, { ...o, approve: ["*"] })).toBe(true);
    expect(mayApprove(carol, seat, { ...o, approve: ["other", "local.sup2"] })).toBe(false);
    expect(mayApprove(carol, seat, o)).toBe(false);
  });
});

describe("the approve subject and the wire schemas", () => {
  it("has exactly 7 tokens, the answerer last; the permission pattern covers only answers as oneself", () => {
    const s = approveSubject("sp", seat, pat);
    expect(s).toBe("cotal.sp.approve.local.sup.local.pat");
    expect(parseApproveSubject(s)).toEqual({ space: "sp", seat, from: pat });
    expect(parseApproveSubject("cotal.sp.approve.local.sup.local")).toBeUndefined();
    expect(parseApproveSubject("cotal.sp.approve.local.sup.local.pat.x")).toBeUndefined();
    expect(subjectMatches(approveAs("sp", pat), s)).toBe(true);
    expect(subjectMatches(approveAs("sp", carol), s)).toBe(false);
    expect(subjectMatches(approveInbox("sp", seat), s)).toBe(true);
    expect(subjectMatches(approveInbox("sp", pat), s)).toBe(false);
    expect(() => approveSubject("sp", seat, { owner: "local", actor: "a.b" })).toThrow();
  });

  it("an answer is {id, decision, reason?} and nothing else; an id is ap- and 10 base32 characters", () => {
    const id = newAskId();
    expect(id).toMatch(/^ap-[a-z2-7]{10}$/);
    expect(ApprovalAnswer.safeParse({ id, decision: "allow" }).success).toBe(true);
    expect(ApprovalAnswer.safeParse({ id, decision: "deny", reason: "no" }).success).toBe(true);
    expect(ApprovalAnswer.safeParse({ id, decision: "maybe" }).success).toBe(false);
    expect(ApprovalAnswer.safeParse({ id, decision: "allow", by: "local.x" }).success).toBe(false);
    expect(ApprovalAnswer.safeParse({ id: "ap-1", decision: "allow" }).success).toBe(false);
    expect(ApprovalAnswer.safeParse({ id, decision: "deny", reason: "x".repeat(501) }).success).toBe(false);
  });

  it("the hook relays a permission ask's input as the dialog shows it, and no other hook's", () => {
    const ask = trimPayload({ hook_event_name: "PermissionRequest", tool_name: "Bash", tool_input: { command: "touch a", description: "make a", timeout: 5 } });
    expect(ask.ask_input).toEqual({ command: "touch a", description: "make a", timeout: "5" });
    expect(trimPayload({ hook_event_name: "PreToolUse", tool_name: "Bash", tool_input: { command: "touch a" } })).not.toHaveProperty("ask_input");
    expect(askInputOf({ content: "x".repeat(5_000) }).content).toHaveLength(4_000);
    expect(askInputOf("text")).toEqual({});
  });

  it("Claude's decision: allow, a denial naming who and why, a managed seat's denial at the bound, or none for a hand-started session", () => {
    expect(permissionDecision({ kind: "answered", decision: "allow", by: "local.pat" }, { managed: true, timeoutMs: 1 })).toEqual({ behavior: "allow" });
    expect(permissionDecision({ kind: "answered", decision: "deny", by: "local.pat", reason: "not\u001b[31m now" }, { managed: true, timeoutMs: 1 })).toEqual({
      behavior: "deny",
      // The reason is another principal's text: its escape is shown, never passed on.
      message: 'local.pat denied this over the mesh: "not\u241b\uff3b31m now". Do not retry it; do something else or ask them.',
    });
    expect(permissionDecision({ kind: "expired" }, { managed: true, timeoutMs: 300_000 })).toEqual({
      behavior: "deny",
      message: expect.stringContaining("Nobody answered this permission ask within 300 s"),
    });
    expect(permissionDecision({ kind: "expired" }, { managed: false, timeoutMs: 60_000 })).toBeUndefined();
  });

  it("per runtime: Claude and Codex take the decision in one shape (Codex's PermissionRequestDecisionWire); a hand-started Codex session's asks stay its own; others ask nothing", () => {
    const allow = { hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow" } } };
    const deny = { behavior: "deny" as const, message: "no" };
    for (const runtime of ["claude", "codex"]) {
      expect(cliFacetOf(runtime).approvals!.reply({ behavior: "allow" })).toEqual(allow);
      expect(cliFacetOf(runtime).approvals!.reply(deny)).toEqual({ hookSpecificOutput: { hookEventName: "PermissionRequest", decision: deny } });
    }
    // Claude shows its dialog beside the hook; Codex's waits for it, so only a managed seat's asks go out.
    expect(cliFacetOf("claude").approvals!.sessions).toBe("all");
    expect(cliFacetOf(undefined).approvals!.sessions).toBe("all");
    expect(cliFacetOf("codex").approvals!.sessions).toBe("managed");
    for (const runtime of ["gemini", "copilot", "other"]) expect(cliFacetOf(runtime).approvals).toBeUndefined();
  });

  it("a hand-started session's owner is the person recorded in its folder's .cotal/person.json, for that space", () => {
    const dir = mkdtempSync(join(tmpdir(), "cotal-person-"));
    expect(folderPerson(dir, "sp")).toBeUndefined();
    mkdirSync(join(dir, ".cotal"));
    writeFileSync(join(dir, ".cotal", "person.json"), JSON.stringify({ name: "pat", space: "sp" }));
    expect(folderPerson(dir, "sp")).toBe("local.pat");
    expect(folderPerson(dir, "other")).toBeUndefined();
  });
});

describe("an approval desk on a real broker", () => {
  let server: NatsServer;
  let nc: NatsConnection;
  const space = "apdesk";
  beforeAll(async () => {
    server = await NatsServer.start();
    nc = await connect({ servers: server.url });
  }, 60_000);
  afterAll(async () => {
    await nc?.close();
    await server?.cleanup();
  });

  function desk(o: { managed?: boolean; timeoutMs?: number } = {}) {
    const frames: Array<{ name: string; value: Record<string, unknown> }> = [];
    const d = new ApprovalDesk({
      nc,
      space,
      me: seat,
      owner: "local.pat",
      managed: o.managed ?? true,
      timeoutMs: o.timeoutMs ?? 60_000,
      plane: { custom: (name, value) => frames.push({ name, value: value as Record<string, unknown> }) },
      // carol holds no right; "dana" holds it by her identity record.
      approveRight: async (who) => who.actor === "dana",
      log: logger("test-approvals"),
    });
    d.start();
    return { d, frames };
  }

  it("the owner's allow settles the ask; carol is refused (not-allowed) and it stays open; a second answer is already-answered", async () => {
    const { d, frames } = desk();
    const asked = d.ask("Bash", { command: "touch x" });
    await nc.flush();
    const ask = ApprovalAsked.parse(frames.find((f) => f.name === APPROVAL_EVENTS.asked)!.value);
    expect(ask).toMatchObject({ seat: "local.sup", tool: "Bash", input: { command: "touch x" }, onExpiry: "denied" });

    expect(await answerApproval(nc, space, carol, { seat: "local.sup", id: ask.id }, "allow")).toMatchObject({ ok: false, code: "not-allowed" });
    expect(d.pending).toBe(1);
    expect(await answerApproval(nc, space, pat, { seat: "local.sup", id: ask.id }, "allow")).toEqual({ ok: true });
    expect(await asked).toEqual({ kind: "answered", decision: "allow", by: "local.pat" });
    expect(await answerApproval(nc, space, OPERATOR_PRINCIPAL, { seat: "local.sup", id: ask.id }, "deny")).toMatchObject({
      ok: false,
      code: "already-answered",
    });
    expect(await answerApproval(nc, space, pat, { seat: "local.sup", id: newAskId() }, "deny")).toMatchObject({ ok: false, code: "unknown-ask" });
    expect(frames.map((f) => [f.name, f.value.by ?? null, f.value.why ?? f.value.decision ?? null])).toEqual([
      [APPROVAL_EVENTS.asked, null, null],
      [APPROVAL_EVENTS.refused, "local.carol", "not-allowed"],
      [APPROVAL_EVENTS.answered, "local.pat", "allow"],
      [APPROVAL_EVENTS.refused, "local.cotal_cli", "already-answered"],
      [APPROVAL_EVENTS.refused, "local.pat", "unknown-ask"],
    ]);
    d.stop();
  });

  it("unanswered, the ask expires (a frame says denied for a managed seat, prompt for a hand-started one) and a late answer is told so", async () => {
    for (const managed of [true, false]) {
      const { d, frames } = desk({ managed, timeoutMs: 300 });
      const outcome = await d.ask("Bash", { command: "touch y" });
      expect(outcome).toEqual({ kind: "expired" });
      const id = (frames[0]!.value as { id: string }).id;
      expect(frames[1]).toMatchObject({ name: APPROVAL_EVENTS.expired, value: { id, outcome: managed ? "denied" : "prompt" } });
      expect(await answerApproval(nc, space, pat, { seat: "local.sup", id }, "allow")).toMatchObject({ ok: false, code: "expired" });
      d.stop();
    }
  });

  it("an ask still open when the session moves on (answered at the terminal) leaves the list, outcome prompt", async () => {
    const { d, frames } = desk({ managed: false });
    const asked = d.ask("Bash", { command: "touch z" });
    d.movedOn();
    expect(await asked).toEqual({ kind: "expired" });
    expect(frames.map((f) => [f.name, f.value.outcome ?? null])).toEqual([
      [APPROVAL_EVENTS.asked, null],
      [APPROVAL_EVENTS.expired, "prompt"],
    ]);
    d.stop();
  });

  it("a person with the approve right and the operator settle asks; the frames fold into what stays open", async () => {
    const { d, frames } = desk();
    const a = d.ask("Bash", { command: "one" });
    const b = d.ask("Bash", { command: "two" });
    const c = d.ask("Bash", { command: "three" });
    await until(() => frames.length === 3, 5_000, "three asks");
    const [ia, ib] = frames.map((f) => (f.value as { id: string }).id);
    expect(await answerApproval(nc, space, { owner: "local", actor: "dana" }, { seat: "local.sup", id: ia! }, "deny", "not now")).toEqual({ ok: true });
    expect(await answerApproval(nc, space, OPERATOR_PRINCIPAL, { seat: "local.sup", id: ib! }, "allow")).toEqual({ ok: true });
    expect(await a).toEqual({ kind: "answered", decision: "deny", by: "local.dana", reason: "not now" });
    expect(await b).toMatchObject({ kind: "answered", decision: "allow", by: "local.cotal_cli" });
    const frame: AgUiFrame = {
      kind: "ag-ui.frame",
      protocol: "ag-ui",
      threadId: "t",
      runId: "r",
      epoch: 1,
      seq: 1,
      events: frames.map((f) => ({ type: "CUSTOM" as const, name: f.name, value: f.value })),
    };
    const set = new OpenApprovalSet();
    for (const e of approvalEventsOf(seat, frame)) set.apply(e);
    expect(set.list().map((x) => x.input.command)).toEqual(["three"]);
    // Another seat's plane cannot speak for this one: its asks naming local.sup are not taken.
    expect(approvalEventsOf({ owner: "local", actor: "other" }, frame).filter((e) => e.kind === "asked")).toEqual([]);
    d.stop();
    expect(await c).toEqual({ kind: "expired" });
  });
});
