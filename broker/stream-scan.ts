import type { JetStreamManager, MsgRequest, StoredMsg } from "@nats-io/jetstream";
import { isNoMessageFound, isStreamNotFound } from "./js-errors.js";

/**
 * Every stored message of `stream` on subjects matching `filter`, in sequence order, read one by
 * one with STREAM.MSG.GET (`next_by_subj`, nats-server 2.9+), which every credential's account
 * imports: no consumer is created, and gaps (deleted or expired records) are skipped. A missing
 * stream reads as empty. For small logs (seat histories, heartbeats), not for chat history.
 */
export async function* scanStream(jsm: JetStreamManager, stream: string, filter: string): AsyncGenerator<StoredMsg> {
  for (let seq = 1; ;) {
    let m: StoredMsg | null;
    try {
      // nats.js types next_by_subj for direct gets only; the MSG.GET API takes it too.
      m = await jsm.streams.getMessage(stream, { seq, next_by_subj: filter } as unknown as MsgRequest);
    } catch (err) {
      if (isNoMessageFound(err) || isStreamNotFound(err)) return;
      throw err;
    }
    if (!m) return;
    seq = m.seq + 1;
    yield m;
  }
}
