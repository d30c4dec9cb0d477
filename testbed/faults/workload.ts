// A workload that records promises: a sender DMs the seats, anycasts to the echo seats' role and
// posts on a channel, each
// message with a unique id, recording the broker's receipt (its acknowledgement) or why there was
// none; the echo seats' answers (`replyTo` names the message) prove each DM was handed to a seat,
// and name the process that was handed it and when; the Claude seat's model requests prove what
// its model was shown (model-witness.ts); a channel member on a leaf host records each post it was
// handed.
import type { Content, Delivery, Endpoint } from "../../broker/index.js";
import { ECHO_PROBE_MEDIA_TYPE, EchoProbeReport } from "../../manager/index.js";
import { emptyRecords, type HandOver, type Records, type SendRecord } from "./records.js";
import type { Prng } from "./prng.js";
import type { ModelHandOver } from "./model-witness.js";

export interface WorkloadOptions {
  /** The sender (its answers from the echo seats arrive in its inbox). */
  sender: Endpoint;
  /** Members of `channel` that record the posts they are handed. */
  members: readonly Endpoint[];
  seats: readonly string[];
  /** The seats' role: an anycast to it is answered by one of them. */
  role: string;
  channel: string;
  /**
   * How many times a send whose acknowledgement did not come is tried again, with the same id (the
   * broker dedupes it): SPEC §5's rule for a lost ack.
   */
  retries?: number;
}

/** Sends on request and collects hand-overs into the current schedule's records until stopped. */
export class Workload {
  private stopped = false;
  private readonly counters = new Map<string, number>();
  private started = Date.now();
  private records: Records;

  constructor(private readonly o: WorkloadOptions) {
    this.records = emptyRecords();
    this.read(o.sender, (d) => (d.kind === "dm" && d.message.replyTo ? { id: d.message.replyTo, to: d.from.actor, ...this.probed(d) } : undefined)).catch(
      () => undefined,
    );
    for (const m of o.members) this.read(m, (d) => (d.kind === "channel" ? { id: d.message.id, to: m.me.actor } : undefined)).catch(() => undefined);
  }

  /** Record into `records` from now on (one schedule's), its clock starting at 0. */
  begin(records: Records): void {
    this.records = records;
    this.started = Date.now();
  }

  /** Record that the Claude seat's model was shown a message (the witness saw it in a request). */
  handedToModel(seat: string, h: ModelHandOver): void {
    this.records.handOvers.push({ id: h.id, to: seat, at: this.now(), flaggedRepeat: h.flaggedRepeat, toModel: true });
  }

  /** Milliseconds since the schedule began (the records' clock). */
  now(): number {
    return this.at(Date.now());
  }

  /** An epoch time on the records' clock. */
  at(epochMs: number): number {
    return epochMs - this.started;
  }

  /** What an echo seat's answer says of the process that was handed the message (manager/echo-agent.ts). */
  private probed(d: Delivery): Pick<HandOver, "process" | "handedAt"> {
    for (const p of d.message.parts) {
      if (p.kind !== "data" || (p as { mediaType?: string }).mediaType !== ECHO_PROBE_MEDIA_TYPE) continue;
      const r = EchoProbeReport.safeParse((p as { data: unknown }).data);
      if (r.success) return { process: r.data.pid, handedAt: this.at(r.data.handedAt) };
    }
    return {};
  }

  /** Record what `ep` is handed until its deliveries end (its connection closed). */
  private async read(ep: Endpoint, proof: (d: Delivery) => { id: string; to: string } | undefined): Promise<void> {
    for await (const d of ep.deliveries) {
      const p = proof(d);
      if (p) {
        const h: HandOver = { ...p, at: this.now(), flaggedRepeat: d.possibleRepeat };
        this.records.handOvers.push(h);
      }
      // A failed ack means a redelivery, which the checker sees as a repeat.
      await d.ack().catch(() => undefined);
      if (this.stopped) break;
    }
  }

  /** Send one message chosen by `prng`, and record it. */
  async step(prng: Prng): Promise<void> {
    const roll = prng.next();
    const kind = roll < 0.6 ? "dm" : roll < 0.8 ? "anycast" : "channel";
    const to = kind === "dm" ? prng.pick(this.o.seats) : kind === "anycast" ? this.o.role : this.o.channel;
    const from = this.o.sender.me.actor;
    const n = this.counters.get(from) ?? 0;
    this.counters.set(from, n + 1);
    const id = `${kind}-${from}-${n}-${prng.token()}`;
    const rec: SendRecord = { id, kind, from, to, n, sentAt: this.now() };
    this.records.sends.push(rec);
    // DMs and anycasts ask the echo seat to name the process that was handed them.
    const probe: Content = [
      { kind: "text", text: `#${n}` },
      { kind: "data", mediaType: ECHO_PROBE_MEDIA_TYPE, data: {} },
    ];
    const send = () =>
      kind === "dm"
        ? this.o.sender.dm(to, probe, { id })
        : kind === "anycast"
          ? this.o.sender.anycast(to, probe, { id })
          : this.o.sender.send(to, `#${n}`, { id });
    for (let attempt = 0; attempt <= (this.o.retries ?? 3); attempt += 1) {
      try {
        const r = await send();
        rec.receipt = { seq: r.seq, at: this.now(), duplicate: r.duplicate };
        delete rec.error;
        return;
      } catch (err) {
        rec.error = (err as Error).message;
      }
    }
  }

  /** Stop recording (the endpoints are closed by their owner, which ends the readers). */
  stop(): void {
    this.stopped = true;
  }
}
