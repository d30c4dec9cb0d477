import type { StoredMsg } from "@nats-io/jetstream";
import type { Command } from "commander";
import { z } from "zod";
import { durables, filters, localPrincipal, names, principalId } from "../../schemas/index.js";
import { jsonOption, meshOptions, resolveTarget } from "../mesh-client/mesh-target.js";
import { ago, printJson, printLines } from "../terminal/output.js";
import { isConsumerNotFound, isStreamNotFound } from "../../broker/index.js";
import { withSession, type MeshSession } from "../mesh-client/session.js";
import { requireProfile, SpaceNotProvisionedError } from "../terminal/errors.js";
import { actorName, parseInput } from "../terminal/validate.js";

/** What `cotal deliver pending` reports for one recipient's DM inbox. */
export interface PendingReport {
  recipient: string;
  stream: string;
  durable: string;
  /** false: the recipient never joined, so no inbox exists yet. */
  joined: boolean;
  /** Not yet delivered to the recipient (num_pending). */
  pending: number;
  /** Delivered but not acknowledged (num_ack_pending). */
  ackPending: number;
  /**
   * The inbox's delivery cursor in the DM stream (delivered.stream_seq): the last stream
   * sequence it handed out or passed over. DMs to others stored in between may advance it.
   */
  lastDeliveredSeq?: number;
  /** The oldest message not yet acknowledged, if any. */
  oldestUnacked?: { seq: number; storedAt: string; ageMs: number };
  /** When not joined: DMs stored for the recipient, waiting for its first join. */
  waiting?: number;
}

/** `cotal deliver pending <name>`: the state of one recipient's DM inbox. */
export function registerDeliver(program: Command): void {
  const deliver = program.command("deliver").summary("inspect delivery of DMs").description("Inspect how direct messages are being delivered.");
  const pending = deliver
    .command("pending")
    .description(
      "For one recipient, the DM inbox's state: messages not yet delivered, delivered but not acknowledged, the last " +
        "delivered stream sequence, and the age of the oldest unacknowledged message.",
    )
    .argument("<name>", "the recipient's name");
  jsonOption(meshOptions(pending)).action(async (name: string, raw: Record<string, unknown>) => {
    const f = parseInput(z.object({ name: actorName("recipient name"), json: z.boolean().optional() }), { ...raw, name }, { name: "<name>" });
    const target = resolveTarget(raw);
    requireProfile(
      target.creds,
      ["operator"],
      "read the state of DM inboxes (only the mesh host's operator credential can; run `cotal deliver pending` there)",
    );
    const report = await withSession(target, (s) => inboxState(s, target.space, f.name));
    // Every key is always there: what does not apply is null, not missing.
    if (f.json) printJson({ lastDeliveredSeq: null, oldestUnacked: null, waiting: null, ...report });
    else printLines(...describePending(report));
  });
}

async function inboxState(s: MeshSession, space: string, name: string): Promise<PendingReport> {
  const who = localPrincipal(name);
  const stream = names.dmStream(space);
  const durable = durables.dm(who);
  const base = { recipient: principalId(who), stream, durable };
  const filter = filters.dmInbox(space, who);
  try {
    const info = await s.jsm.consumers.info(stream, durable);
    const report: PendingReport = {
      ...base,
      joined: true,
      pending: info.num_pending,
      ackPending: info.num_ack_pending,
      ...(info.delivered.stream_seq > 0 ? { lastDeliveredSeq: info.delivered.stream_seq } : {}),
    };
    if (info.num_pending + info.num_ack_pending > 0) {
      // Everything at or below the ack floor is acknowledged, so the first inbox message above it is not.
      const oldest = await firstAfter(s, stream, info.ack_floor.stream_seq + 1, filter);
      if (oldest) {
        const storedAt = oldest.time.getTime();
        report.oldestUnacked = { seq: oldest.seq, storedAt: oldest.time.toISOString(), ageMs: Math.max(0, Date.now() - storedAt) };
      }
    }
    return report;
  } catch (err) {
    if (isStreamNotFound(err)) throw new SpaceNotProvisionedError(space, s.target.server, err);
    if (!isConsumerNotFound(err)) throw err;
  }
  let waiting: number;
  try {
    const info = await s.jsm.streams.info(stream, { subjects_filter: filter });
    waiting = Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
  } catch (err) {
    if (isStreamNotFound(err)) throw new SpaceNotProvisionedError(space, s.target.server, err);
    throw err;
  }
  return { ...base, joined: false, pending: waiting, ackPending: 0, waiting };
}

/** The first stored message at or after `seq` on `subject` (the DM stream has no direct get). */
async function firstAfter(s: MeshSession, stream: string, seq: number, subject: string): Promise<StoredMsg | null> {
  // STREAM.MSG.GET accepts {seq, next_by_subj}; the client's type lists only seq / last_by_subj.
  const query = { seq, next_by_subj: subject } as unknown as { seq: number };
  return s.jsm.streams.getMessage(stream, query);
}

function describePending(r: PendingReport): string[] {
  if (!r.joined) {
    return [
      `${r.recipient} has not joined yet: no DM inbox exists for them.`,
      `${r.waiting} DM${r.waiting === 1 ? "" : "s"} stored for them in ${r.stream} will be delivered on their first join.`,
    ];
  }
  return [
    `recipient:            ${r.recipient}  (inbox ${r.durable} on ${r.stream})`,
    `not yet delivered:    ${r.pending}`,
    `delivered, not acked: ${r.ackPending}`,
    `delivered up to seq:  ${r.lastDeliveredSeq ?? "none yet"}`,
    `oldest unacked:       ${r.oldestUnacked ? `seq ${r.oldestUnacked.seq}, stored ${ago(r.oldestUnacked.ageMs)}` : "none (all acknowledged)"}`,
  ];
}
