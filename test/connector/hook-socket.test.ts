// The hook socket's hand-over rules, against a real unix socket and a recording handler:
// mail handed to a hook is acked only when that hook confirms *that* hand-over's receipt; a
// wrong, stale or malformed confirmation releases it; frames over the size limit are dropped
// before they are parsed (these once survived mutation testing).
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { logger, setLogDestination } from "../../broker/index.js";
import { HookSocket, seatPaths, MAX_FRAME_BYTES, tokenMatches, type HookHandler } from "../../connector/internal.js";
import { until } from "../../testbed/until.js";
import { tempControlDir } from "./helpers.js";

const TOKEN = "k".repeat(40);
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => undefined);
  setLogDestination(undefined);
});

/** A handler that hands over `receipts` in turn (undefined: a reply without mail) and records settlements. */
interface Recorder {
  handled: number;
  confirmed: string[];
  released: Array<[string, string]>;
  handler: HookHandler;
}

/** A handler that hands over `receipts` in turn (undefined: a reply without mail) and records settlements. */
function recorder(receipts: Array<string | undefined>): Recorder {
  const rec: Recorder = {
    handled: 0,
    confirmed: [],
    released: [],
    handler: {
      handle: async () => {
        const receipt = receipts[rec.handled++];
        return { reply: { n: rec.handled }, ...(receipt ? { receipt } : {}) };
      },
      confirm: async (r: string) => void rec.confirmed.push(r),
      release: (r: string, why: string) => void rec.released.push([r, why]),
    },
  };
  return rec;
}

async function server(receipts: Array<string | undefined>, opts: { confirmTimeoutMs?: number; requestTimeoutMs?: number } = {}) {
  const ctl = tempControlDir();
  cleanups.push(ctl.cleanup);
  const paths = seatPaths(ctl.dir, { space: "s", owner: "local", actor: "bob" });
  const cs = await HookSocket.claim(paths, "local.bob", logger("hook-socket-test"), opts);
  cleanups.push(() => cs.close());
  const rec = recorder(receipts);
  cs.serve(rec.handler, TOKEN);
  return { socket: paths.socket, rec };
}

function request(extra: Record<string, unknown> = {}) {
  return { v: 1, token: TOKEN, event: "UserPromptSubmit", payload: { hook_event_name: "UserPromptSubmit" }, pids: [process.pid], ...extra };
}

/** One hook run: send a request line, read the first reply line; `then` writes more; resolves when the connector closes the connection. */
function hookRun(socket: string, line: string, then?: (reply: Record<string, unknown>) => string | undefined) {
  return new Promise<{ reply?: Record<string, unknown>; closed: true }>((resolve, reject) => {
    const c = net.connect(socket, () => c.write(line));
    let buf = "";
    let reply: Record<string, unknown> | undefined;
    c.setEncoding("utf8");
    c.on("data", (s: string) => {
      buf += s;
      const nl = buf.indexOf("\n");
      if (nl >= 0 && !reply) {
        reply = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
        const more = then?.(reply);
        if (more !== undefined) c.write(more);
      }
    });
    c.on("error", (err: NodeJS.ErrnoException) => (err.code === "EPIPE" || err.code === "ECONNRESET" ? undefined : reject(err)));
    c.on("close", () => resolve({ ...(reply ? { reply } : {}), closed: true }));
  });
}

const confirmLine = (receipt: unknown, written: unknown = true) => JSON.stringify({ v: 1, written, receipt }) + "\n";

describe("a hook confirmation acks only its own hand-over", () => {
  it("the receipt it was given: acked, nothing released", async () => {
    const { socket, rec } = await server(["r-1"]);
    const run = await hookRun(socket, JSON.stringify(request()) + "\n", (r) => confirmLine(r.receipt));
    expect(run.reply).toEqual({ v: 1, ok: true, reply: { n: 1 }, receipt: "r-1" });
    await until(() => rec.confirmed.length === 1, 5_000, "the hand-over is confirmed");
    expect(rec.confirmed).toEqual(["r-1"]);
    expect(rec.released).toEqual([]);
  });

  it("a wrong receipt: not acked, released as unconfirmed", async () => {
    const { socket, rec } = await server(["r-1"]);
    await hookRun(socket, JSON.stringify(request()) + "\n", () => confirmLine("r-someone-else"));
    await until(() => rec.released.length === 1, 5_000, "the hand-over is released");
    expect(rec.released).toEqual([["r-1", "hook ended without confirming its reply was written"]]);
    expect(rec.confirmed).toEqual([]);
  });

  it("a stale receipt from an earlier hand-over: the new one is not acked", async () => {
    const { socket, rec } = await server(["r-1", "r-2"]);
    await hookRun(socket, JSON.stringify(request()) + "\n", (r) => confirmLine(r.receipt));
    await until(() => rec.confirmed.length === 1, 5_000, "the first hand-over is confirmed");
    const second = await hookRun(socket, JSON.stringify(request()) + "\n", () => confirmLine("r-1"));
    expect(second.reply).toMatchObject({ receipt: "r-2" });
    await until(() => rec.released.length === 1, 5_000, "the second hand-over is released");
    expect(rec.released.map(([r]) => r)).toEqual(["r-2"]);
    expect(rec.confirmed).toEqual(["r-1"]);
  });

  it.each([
    ["written: false", confirmLine("r-1", false)],
    ["no receipt at all", JSON.stringify({ v: 1, written: true }) + "\n"],
    ["a receipt that is not a string", confirmLine(1)],
    ["a line that is not JSON", "written r-1\n"],
    ["another protocol version", JSON.stringify({ v: 2, written: true, receipt: "r-1" }) + "\n"],
  ])("a malformed confirmation (%s): not acked, released", async (_what, line) => {
    const { socket, rec } = await server(["r-1"]);
    await hookRun(socket, JSON.stringify(request()) + "\n", () => line);
    await until(() => rec.released.length === 1, 5_000, "the hand-over is released");
    expect(rec.confirmed).toEqual([]);
  });

  it("a hook that never confirms: released when the confirmation window closes, and the connection is cut", async () => {
    const { socket, rec } = await server(["r-1"], { confirmTimeoutMs: 200 });
    const run = await hookRun(socket, JSON.stringify(request()) + "\n");
    expect(run.reply).toMatchObject({ receipt: "r-1" });
    expect(rec.released).toEqual([["r-1", "hook did not confirm its reply in time"]]);
    expect(rec.confirmed).toEqual([]);
  });

  it("a hook that goes away after the reply: released, not acked", async () => {
    const { socket, rec } = await server(["r-1"]);
    await new Promise<void>((resolve) => {
      const c = net.connect(socket, () => c.write(JSON.stringify(request()) + "\n"));
      c.once("data", () => c.destroy());
      c.on("close", () => resolve());
    });
    await until(() => rec.released.length === 1, 5_000, "the hand-over is released");
    expect(rec.released[0]?.[0]).toBe("r-1");
    expect(rec.confirmed).toEqual([]);
  });

  it("a reply without mail ends the connection and settles nothing", async () => {
    const { socket, rec } = await server([undefined]);
    const run = await hookRun(socket, JSON.stringify(request()) + "\n");
    expect(run.reply).toEqual({ v: 1, ok: true, reply: { n: 1 } });
    expect(rec.confirmed).toEqual([]);
    expect(rec.released).toEqual([]);
  });

  it("a second confirmation on the same connection acks nothing more", async () => {
    const { socket, rec } = await server(["r-1"]);
    await hookRun(socket, JSON.stringify(request()) + "\n", (r) => confirmLine(r.receipt) + confirmLine(r.receipt));
    await until(() => rec.confirmed.length === 1, 5_000, "the hand-over is confirmed");
    expect(rec.confirmed).toEqual(["r-1"]);
    expect(rec.released).toEqual([]);
  });
});

describe("requests the connector refuses", () => {
  it("a wrong token is refused and never handled", async () => {
    const { socket, rec } = await server(["r-1"]);
    for (const token of ["k".repeat(39), "k".repeat(39) + "j", "k".repeat(41), ""]) {
      const run = await hookRun(socket, JSON.stringify(request({ token })) + "\n");
      expect(run.reply).toEqual({ v: 1, ok: false, error: "refused" });
    }
    expect(rec.handled).toBe(0);
  });

  it("a malformed request is answered as such and never handled", async () => {
    const { socket, rec } = await server(["r-1"]);
    expect((await hookRun(socket, "not json\n")).reply).toEqual({ v: 1, ok: false, error: "malformed request" });
    expect((await hookRun(socket, JSON.stringify(request({ v: 2 })) + "\n")).reply).toEqual({ v: 1, ok: false, error: "malformed request" });
    expect(rec.handled).toBe(0);
  });

  it("tokens are compared whole", () => {
    expect(tokenMatches(TOKEN, TOKEN)).toBe(true);
    expect(tokenMatches(TOKEN, TOKEN.slice(1))).toBe(false);
    expect(tokenMatches(TOKEN, TOKEN + "k")).toBe(false);
    expect(tokenMatches(TOKEN, "j" + TOKEN.slice(1))).toBe(false);
    expect(tokenMatches(TOKEN, undefined)).toBe(false);
    expect(tokenMatches(TOKEN, 42)).toBe(false);
  });
});

describe("the control socket's frame limit", () => {
  /** A well-formed request line of exactly `length` characters, newline included. */
  function requestOfLength(length: number): string {
    const bare = JSON.stringify(request({ payload: { hook_event_name: "UserPromptSubmit", cwd: "" } })) + "\n";
    const line = JSON.stringify(request({ payload: { hook_event_name: "UserPromptSubmit", cwd: "x".repeat(length - bare.length) } })) + "\n";
    expect(line).toHaveLength(length);
    return line;
  }

  it("a request of exactly the limit is served", async () => {
    const { socket, rec } = await server([undefined]);
    const run = await hookRun(socket, requestOfLength(MAX_FRAME_BYTES));
    expect(run.reply).toEqual({ v: 1, ok: true, reply: { n: 1 } });
    expect(rec.handled).toBe(1);
  });

  it("one byte over the limit: the connection is dropped unanswered and the request never handled", async () => {
    const logs: Array<Record<string, unknown>> = [];
    setLogDestination({ write: (l: string) => void logs.push(JSON.parse(l)) });
    const { socket, rec } = await server([undefined]);
    const run = await hookRun(socket, requestOfLength(MAX_FRAME_BYTES + 1));
    expect(run.reply).toBeUndefined();
    expect(rec.handled).toBe(0);
    expect(logs.map((l) => l.msg)).toContain("a hook frame exceeded the size limit; connection dropped");
  });

  it("a frame with no newline that keeps growing is cut at the limit", async () => {
    const { socket, rec } = await server([undefined]);
    const run = await hookRun(socket, "{" + " ".repeat(MAX_FRAME_BYTES));
    expect(run.reply).toBeUndefined();
    expect(rec.handled).toBe(0);
  });

  it("an oversize confirmation is dropped and its hand-over released, not acked", async () => {
    const { socket, rec } = await server(["r-1"]);
    await hookRun(
      socket,
      JSON.stringify(request()) + "\n",
      () => JSON.stringify({ v: 1, written: true, receipt: "r-1", pad: "x".repeat(MAX_FRAME_BYTES) }) + "\n",
    );
    await until(() => rec.released.length === 1, 5_000, "the hand-over is released");
    expect(rec.confirmed).toEqual([]);
  });
});
