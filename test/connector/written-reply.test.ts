// WrittenReplyTransport: cotal_inbox acks once its reply was written, so it must fire exactly for responses
// (result or error) with an id, only after the inner transport's send resolved, and pass
// everything else straight through (its mutants were once reached only over stdio).
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { WrittenReplyTransport } from "../../connector/internal.js";

function fakeInner() {
  const log: string[] = [];
  let release: () => void = () => undefined;
  const inner: Transport & { gate: boolean } = {
    gate: false,
    async start() {
      log.push("start");
    },
    async close() {
      log.push("close");
    },
    async send(m: JSONRPCMessage) {
      log.push(`send ${JSON.stringify(m)}`);
      if (inner.gate) await new Promise<void>((r) => (release = r));
    },
    setProtocolVersion(v: string) {
      log.push(`version ${v}`);
    },
  };
  return { inner, log, release: () => release() };
}

describe("WrittenReplyTransport", () => {
  it("fires for a result or an error with an id, never for requests or notifications", async () => {
    const { inner } = fakeInner();
    const written: unknown[] = [];
    const t = new WrittenReplyTransport(inner, (id) => written.push(id));
    await t.send({ jsonrpc: "2.0", id: 1, result: {} });
    await t.send({ jsonrpc: "2.0", id: "b", error: { code: -1, message: "x" } });
    await t.send({ jsonrpc: "2.0", id: 2, method: "ping" });
    await t.send({ jsonrpc: "2.0", method: "notifications/x" });
    await t.send({ jsonrpc: "2.0", id: null, error: { code: -1, message: "parse" } } as unknown as JSONRPCMessage);
    expect(written).toEqual([1, "b"]);
  });

  it("fires only after the inner send resolved, and not if it failed", async () => {
    const f = fakeInner();
    const written: unknown[] = [];
    const t = new WrittenReplyTransport(f.inner, (id) => written.push(id));
    f.inner.gate = true;
    const sending = t.send({ jsonrpc: "2.0", id: 7, result: {} });
    await new Promise((r) => setImmediate(r));
    expect(written).toEqual([]);
    f.release();
    await sending;
    expect(written).toEqual([7]);
    const failing = new WrittenReplyTransport({ ...f.inner, send: async () => Promise.reject(new Error("pipe closed")) }, (id) => written.push(id));
    await expect(failing.send({ jsonrpc: "2.0", id: 8, result: {} })).rejects.toThrow("pipe closed");
    expect(written).toEqual([7]);
  });

  it("passes start, close, the protocol version and the handlers through", async () => {
    const f = fakeInner();
    const t = new WrittenReplyTransport(f.inner, () => undefined);
    await t.start();
    t.setProtocolVersion("2025-06-18");
    await t.close();
    expect(f.log).toEqual(["start", "version 2025-06-18", "close"]);
    const onmessage = () => undefined;
    const onclose = () => undefined;
    const onerror = () => undefined;
    t.onmessage = onmessage;
    t.onclose = onclose;
    t.onerror = onerror;
    expect([f.inner.onmessage, f.inner.onclose, f.inner.onerror]).toEqual([onmessage, onclose, onerror]);
    expect([t.onmessage, t.onclose, t.onerror]).toEqual([onmessage, onclose, onerror]);
  });
});
