import { jetstream, type JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { names, type Principal } from "../schemas/index.js";
import { callControl } from "./control.js";
import { JS_OPTIONS, jetStreamConnection } from "./js-access.js";
import type { Logger } from "./log.js";
import { verifyEnvelope, type VerifiedMessage } from "./verify.js";

/** How long one read of a DM inbox waits for the messages its consumer said were waiting, ms. */
const INBOX_FETCH_MS = 2_000;

/** A DM inbox as read once: what waits, and the messages taken from it (oldest first). */
export interface DmInboxRead {
  /**
   * DMs not yet acknowledged: waiting, handed back, or held by a reader now (a running `cotal
   * listen`). Those a reader holds, and those past `max`, are not among `messages`.
   */
  unread: number;
  /** The DMs taken, at most the `max` asked for; each with its stream sequence and delivery count. */
  messages: Array<VerifiedMessage & { seq: number; deliveries: number }>;
  /**
   * Settle what was taken: `read` acknowledges them (the broker forgets them; nothing shows them
   * again), otherwise they are handed back at once, unread, to whoever reads the inbox next. A
   * predicate of the stream sequence marks read only those it picks (`cotal web`'s Inbox).
   */
  settle(read: boolean | ((seq: number) => boolean)): Promise<void>;
}

/**
 * Read `who`'s DM inbox (its durable on DM_<space>) without joining the mesh: the mesh service
 * creates the inbox first if it was never made (`register`, as `who`), then up to `max` waiting
 * DMs are taken. A message that is malformed or whose sender disagrees with its subject is
 * dropped (terminated) and not counted among `messages`.
 */
export async function readDmInbox(
  nc: NatsConnection,
  creds: string | undefined,
  space: string,
  who: Principal,
  o: { max: number; log: Logger },
): Promise<DmInboxRead> {
  const reg = await callControl(nc, space, "register", who, {});
  const js = jetstream(jetStreamConnection(nc, creds), JS_OPTIONS);
  const consumer = await js.consumers.get(names.dmStream(space), reg.dm);
  const info = await consumer.info();
  const taken: JsMsg[] = [];
  const messages: DmInboxRead["messages"] = [];
  // Waiting and handed back (a nak, or an ack wait that ran out) alike; those a reader holds now
  // do not come, and the fetch ends when it expires.
  const unread = info.num_pending + info.num_ack_pending;
  const want = Math.min(o.max, unread);
  if (want > 0) {
    for await (const m of await consumer.fetch({ max_messages: want, expires: INBOX_FETCH_MS })) {
      const v = verifyEnvelope(m.subject, m.data, o.log);
      if (!v || v.kind !== "dm") {
        m.term("not a DM whose envelope agrees with its subject");
        continue;
      }
      taken.push(m);
      messages.push({ ...v, seq: m.seq, deliveries: m.info.deliveryCount });
      if (taken.length >= want) break;
    }
  }
  return {
    unread,
    messages,
    settle: async (read) => {
      for (const m of taken) {
        if (!(typeof read === "function" ? read(m.seq) : read)) m.nak();
        else await m.ackAck();
      }
      // A nak is a plain publish: it must reach the server before the connection closes, or the
      // DMs stay held until the consumer's ack wait runs out.
      await nc.flush();
    },
  };
}
