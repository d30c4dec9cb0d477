import type { Delivery, Endpoint } from "../../broker/index.js";
import { messageText } from "../../schemas/index.js";

/**
 * Collect an endpoint's deliveries in the background, acking each (as a consumer that handed
 * the message over would). `stop()` ends the collection.
 */
export function collect(ep: Endpoint, opts: { ack?: boolean } = {}): { items: Delivery[]; texts: () => string[]; stop: () => void } {
  const items: Delivery[] = [];
  let stopped = false;
  void (async () => {
    for await (const d of ep.deliveries) {
      if (stopped) break;
      items.push(d);
      // An ack the closing connection cut off only means a redelivery (which a test would see), not a crash.
      if (opts.ack !== false) await d.ack().catch(() => undefined);
    }
  })();
  return { items, texts: () => items.map((d) => messageText(d.message)), stop: () => (stopped = true) };
}
