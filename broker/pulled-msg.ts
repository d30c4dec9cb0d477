import type { DeliveryInfo, JsMsg, PullOptions } from "@nats-io/jetstream";
import type { Msg, MsgHdrs, NatsConnection } from "@nats-io/transport-node";

const encoder = new TextEncoder();
const ACK = encoder.encode("+ACK");
const WPI = encoder.encode("+WPI");
const TERM = encoder.encode("+TERM");
const NAK = encoder.encode("-NAK");

/** Does `reply` name a JetStream delivery (`$JS.ACK.…`)? Anything else on a pull's inbox is not one. */
export function isDeliveryReply(reply: string | undefined): reply is string {
  return reply !== undefined && reply.startsWith("$JS.ACK.");
}

/** An ack subject's tokens, always in the long form (`_` and an empty hash when the server named neither). */
function ackTokens(reply: string): string[] {
  const t = reply.split(".");
  if (t.length === 9) t.splice(2, 0, "_", "");
  if (t.length < 11 || t[0] !== "$JS" || t[1] !== "ACK") throw new Error(`not a JetStream delivery's ack subject: ${reply}`);
  return t;
}

/**
 * What a JetStream delivery's ack subject says about it: `$JS.ACK.<stream>.<consumer>.<count>.
 * <stream seq>.<consumer seq>.<ns>.<pending>`, or the same after `<domain>.<account hash>` (and
 * a trailing token) when the server names them.
 */
export function deliveryInfo(reply: string): DeliveryInfo {
  const t = ackTokens(reply);
  const count = Number(t[6]);
  return {
    domain: t[2] === "_" ? "" : t[2]!,
    account_hash: t[3],
    stream: t[4]!,
    consumer: t[5]!,
    deliveryCount: count,
    redelivered: count > 1,
    streamSequence: Number(t[7]),
    deliverySequence: Number(t[8]),
    timestampNanos: Number(t[9]),
    pending: Number(t[10]),
  };
}

/**
 * A message a quiet pull received (broker/quiet-pull.ts), with JetStream's ack protocol: what
 * nats.js's own message does for the messages its `consume()` receives, which it does not hand
 * out for a pull of one's own. Acks are published to the delivery's reply subject; a second
 * settle of the same message is not sent (a `working()` is not a settle).
 */
export class PulledMsg implements JsMsg {
  private settled = false;
  private parsed?: DeliveryInfo;

  constructor(
    private readonly msg: Msg,
    private readonly nc: NatsConnection,
    private readonly ackTimeoutMs = 5_000,
  ) {}

  get reply(): string {
    return this.msg.reply ?? "";
  }
  get subject(): string {
    return this.msg.subject;
  }
  get sid(): number {
    return this.msg.sid;
  }
  get data(): Uint8Array {
    return this.msg.data;
  }
  get headers(): MsgHdrs | undefined {
    return this.msg.headers;
  }
  get info(): DeliveryInfo {
    return (this.parsed ??= deliveryInfo(this.reply));
  }
  get redelivered(): boolean {
    return this.info.deliveryCount > 1;
  }
  get seq(): number {
    return this.info.streamSequence;
  }
  get time(): Date {
    return new Date(Math.floor(this.info.timestampNanos / 1e6));
  }
  get timestamp(): string {
    return this.time.toISOString();
  }
  get timestampNanos(): bigint {
    return BigInt(ackTokens(this.reply)[9]!);
  }

  ack(): void {
    this.settle(ACK);
  }
  nak(millis?: number): void {
    this.settle(millis ? encoder.encode(`-NAK ${JSON.stringify({ delay: millis * 1_000_000 })}`) : NAK);
  }
  working(): void {
    if (!this.settled) this.msg.respond(WPI);
  }
  term(reason = ""): void {
    this.settle(reason ? encoder.encode(`+TERM ${reason}`) : TERM);
  }
  next(subj: string, ro: Partial<PullOptions> = {}): void {
    const args: Record<string, unknown> = { batch: ro.batch ?? 1, no_wait: ro.no_wait ?? false };
    if (ro.expires && ro.expires > 0) args.expires = ro.expires * 1_000_000;
    this.settled = true;
    this.msg.respond(encoder.encode(`+NXT ${JSON.stringify(args)}`), { reply: subj });
  }
  /** Ack and wait for the broker to confirm it; false when this message was settled already. */
  async ackAck(opts?: Partial<{ timeout: number }>): Promise<boolean> {
    if (this.settled || !this.msg.reply) return false;
    this.settled = true;
    await this.nc.request(this.msg.reply, ACK, { timeout: opts?.timeout ?? this.ackTimeoutMs });
    return true;
  }
  json<T>(): T {
    return this.msg.json<T>();
  }
  string(): string {
    return this.msg.string();
  }

  private settle(payload: Uint8Array): void {
    if (this.settled) return;
    this.settled = true;
    this.msg.respond(payload);
  }
}
