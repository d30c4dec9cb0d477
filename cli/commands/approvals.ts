// `cotal approvals`, `cotal approve ID`, `cotal deny ID` (docs/cli.md): the seats' open permission
// asks, and a person's answer to one. They run as the person at the mesh host by default (their
// credential, as `cotal send` does); the seat checks the approve right of whoever answers.
import type { Command } from "commander";
import { z } from "zod";
import { answerApproval, credsCaller, openApprovals } from "../../broker/index.js";
import { ApprovalId, localPrincipal, MAX_APPROVAL_REASON, principalId, type ApprovalDecision, type Principal } from "../../schemas/index.js";
import { jsonOption, meshOptions, resolveTarget, withMeshConnection, type MeshTarget } from "../mesh-client/mesh-target.js";
import { ApprovalRefusedError, CommandFailedError } from "../terminal/errors.js";
import { defaultActorName } from "../identity/os-user-name.js";
import { ago, printJson, printLines, table } from "../terminal/output.js";
import { inputLine } from "../terminal/approval-text.js";
import { parseInput } from "../terminal/validate.js";

/** Who answers: the credential's own principal (the person's at the mesh host, by default); on an open mesh, the person's name. */
function answerer(target: MeshTarget): Principal {
  return target.creds ? credsCaller(target.creds) : localPrincipal(target.person ?? defaultActorName());
}

/** How long until `at`, for people. */
function left(at: number, now: number): string {
  const s = Math.max(0, Math.round((at - now) / 1000));
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}

const ListFlags = z.object({ json: z.boolean().optional() });
const AnswerFlags = z.object({ id: ApprovalId, reason: z.string().min(1).max(MAX_APPROVAL_REASON).optional(), json: z.boolean().optional() });

/** `cotal approvals`, `cotal approve`, `cotal deny`. */
export function registerApprovals(program: Command): void {
  const list = program
    .command("approvals")
    .summary("list the seats' open permission asks (what each asks to run), to answer with approve or deny")
    .description(
      "List the permission asks of the space's seats that nobody answered yet: a supervised seat's tool call its allow-list " +
        "does not name, or a hand-started session's permission dialog. Each shows its id, the seat, the tool and its input as " +
        "the agent CLI shows it, how long ago it was asked and how long it still waits. Answer with `cotal approve ID` or " +
        "`cotal deny ID` (as the person at the mesh host, by default). Unanswered, a managed seat's ask is denied at its bound; " +
        "a hand-started session's own prompt stands.",
    );
  jsonOption(meshOptions(list)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(ListFlags, raw);
    const target = resolveTarget(raw, undefined, {});
    const me = answerer(target);
    const asks = await withMeshConnection(target, "cotal-approvals", (nc) => openApprovals(nc, target.space, { me }));
    const now = Date.now();
    if (f.json) {
      printJson(asks);
      return;
    }
    if (!asks.length) {
      printLines("No open permission asks.");
      return;
    }
    printLines(
      ...table(
        ["ID", "SEAT", "TOOL", "INPUT", "ASKED", "LEFT", "THEN"],
        asks.map((a) => [a.id, a.seat, a.tool, inputLine(a), ago(now - a.askedAt), left(a.expiresAt, now), a.onExpiry === "denied" ? "denied" : "its prompt"]),
      ),
    );
  });

  for (const decision of ["allow", "deny"] as const) {
    const verb = decision === "allow" ? "approve" : "deny";
    const cmd = program
      .command(`${verb} <id>`)
      .summary(decision === "allow" ? "allow a seat's open permission ask (it runs)" : "deny a seat's open permission ask (it does not run)")
      .description(
        `${decision === "allow" ? "Allow" : "Deny"} the open permission ask <id> (as \`cotal approvals\` lists it), as the person at the mesh host by ` +
          "default. The seat checks that you may answer it: its owner, the operator, or a person minted with the approve right " +
          "for it (`cotal mint NAME --profile person --approve SEAT`). Exit codes: 1 no open ask has that id (answered, expired or " +
          "never asked) or the seat did not answer, 5 you may not answer its asks.",
      )
      .option("--reason <text>", "why: shown to the seat's model with a denial, and recorded on its event plane");
    jsonOption(meshOptions(cmd)).action(async (id: string, raw: Record<string, unknown>) => {
      const f = parseInput(AnswerFlags, { ...raw, id }, { id: "<id>", reason: "--reason" });
      const target = resolveTarget(raw, undefined, {});
      const me = answerer(target);
      const result = await withMeshConnection(target, "cotal-approvals", async (nc) => {
        const ask = (await openApprovals(nc, target.space, { me })).find((a) => a.id === f.id);
        if (!ask)
          throw new CommandFailedError(`No open permission ask has the id ${f.id}: it was answered, it expired, or it was never asked.`, {
            remedy: "List the open asks with `cotal approvals`.",
          });
        return { ask, reply: await answerApproval(nc, target.space, me, ask, decision as ApprovalDecision, f.reason) };
      });
      const { ask, reply } = result;
      if (!reply.ok) throw new ApprovalRefusedError(reply.code, reply.message, principalId(me), ask.seat);
      if (f.json) printJson({ id: ask.id, seat: ask.seat, tool: ask.tool, decision, by: principalId(me) });
      else printLines(`${decision === "allow" ? "allowed" : "denied"} ${ask.id}: ${ask.seat} ${ask.tool} ${inputLine(ask)}`);
    });
  }
}
