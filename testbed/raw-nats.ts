import { createConnection, type Socket } from "node:net";
import { fromSeed } from "@nats-io/nkeys";

/**
 * A NATS client that speaks the wire protocol itself, for tests and benches that must see what
 * the server answers: nats.js refuses a payload over the INFO's max_payload before sending it,
 * surfaces a refused connect as a timeout, and always drains its socket. This one sends what it
 * is told, shows every `-ERR` line, and can stop reading (a slow consumer).
 */
export class RawNats {
  private received = "";
  private waiters: Array<() => void> = [];
  /** Resolves when the server (or close()) ends the connection. */
  readonly closed: Promise<void>;

  private constructor(
    private readonly sock: Socket,
    /** The server's INFO as sent after the connection was accepted. */
    public info: Record<string, unknown>,
  ) {
    this.closed = new Promise((resolve) => sock.once("close", () => resolve()));
    sock.on("data", (d: Buffer) => {
      // Only the protocol lines matter here: message bodies are not kept.
      this.received = `${this.received}${d.toString("latin1")}`.slice(-64 * 1024);
      for (const w of this.waiters.splice(0)) w();
    });
    sock.on("close", () => {
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /**
   * Connect with a `.creds` file's bytes (JWT and seed), and wait for the server's answer to the
   * first PING: resolves once accepted, rejects with RawRefusedError quoting its `-ERR`.
   */
  static async connect(url: string, creds: Uint8Array, timeoutMs = 10_000): Promise<RawNats> {
    const text = new TextDecoder().decode(creds);
    const jwt = /-----BEGIN NATS USER JWT-----\s+(\S+)\s/.exec(text)?.[1];
    const seed = /-----BEGIN USER NKEY SEED-----\s+(\S+)\s/.exec(text)?.[1];
    if (!jwt || !seed) throw new Error("not a .creds file: no user JWT or seed");
    const u = new URL(url);
    const sock = createConnection(Number(u.port), u.hostname);
    sock.setNoDelay(true);
    const info = await new Promise<Record<string, unknown>>((resolve, reject) => {
      let head = "";
      const onData = (d: Buffer) => {
        head += d.toString("latin1");
        const end = head.indexOf("\r\n");
        if (end < 0) return;
        sock.off("data", onData);
        resolve(JSON.parse(head.slice(5, end)) as Record<string, unknown>);
      };
      sock.on("data", onData);
      sock.once("error", reject);
    });
    const sig = Buffer.from(fromSeed(new TextEncoder().encode(seed)).sign(new TextEncoder().encode(String(info.nonce)))).toString("base64url");
    const raw = new RawNats(sock, info);
    const hello = { jwt, sig, verbose: false, pedantic: false, protocol: 1, headers: true, no_responders: true, lang: "raw", version: "0" };
    raw.send(`CONNECT ${JSON.stringify(hello)}\r\nPING\r\n`);
    const answer = await raw.waitFor(/-ERR '[^']*'|PONG\r\n/, timeoutMs);
    if (answer.startsWith("-ERR")) {
      raw.close();
      throw new RawRefusedError(answer);
    }
    // Right after accepting, the server sends an INFO with the user's own max_payload: a second PING's PONG follows it.
    await raw.waitFor(/PONG\r\n[^]*PONG\r\n/, timeoutMs, "PING\r\n");
    const again = /INFO (.*?)\r\n/.exec(raw.received);
    if (again?.[1]) raw.info = JSON.parse(again[1]) as Record<string, unknown>;
    return raw;
  }

  /** Write protocol text (or bytes) as is. */
  send(data: string | Uint8Array): void {
    this.sock.write(data);
  }

  /** Subscribe `subject` under subscription id `sid`. */
  static sub(subject: string, sid: number): string {
    return `SUB ${subject} ${sid}\r\n`;
  }

  /** Publish `size` bytes on `subject`. */
  static pub(subject: string, size: number): Buffer {
    return Buffer.concat([Buffer.from(`PUB ${subject} ${size}\r\n`), Buffer.alloc(size, 120), Buffer.from("\r\n")]);
  }

  /**
   * Send `data` and a PING, and wait for the server's answer to all of it: `PONG`, or the first
   * `-ERR` it sent instead (`-ERR 'Maximum Payload Violation'`), or `closed: …` if it hung up.
   */
  async exchange(data: string | Uint8Array, timeoutMs = 10_000): Promise<string> {
    this.received = "";
    this.send(data);
    this.send("PING\r\n");
    return this.waitFor(/-ERR '[^']*'|PONG\r\n/, timeoutMs);
  }

  /** Stop reading the socket: what the server sends it queues, up to its max_pending. */
  stopReading(): void {
    this.sock.pause();
  }

  /** Read the socket again (after stopReading): what the server sent, and its close if it closed. */
  readAgain(): void {
    this.sock.resume();
  }

  get isClosed(): boolean {
    return this.sock.destroyed || this.sock.readyState === "closed";
  }

  close(): void {
    this.sock.destroy();
  }

  /** The first text received since the last exchange() that matches (after sending `send`), or the connection's close. */
  async waitFor(re: RegExp, timeoutMs: number, send?: string): Promise<string> {
    if (send) this.send(send);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = re.exec(this.received);
      if (m) return m[0];
      if (this.isClosed) return `closed: ${this.received.trim().split("\r\n").pop() ?? ""}`;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no answer matching ${String(re)} within ${timeoutMs} ms; received: ${JSON.stringify(this.received.slice(-300))}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }
}

/** The server refused the connection; `message` is its `-ERR` line. */
export class RawRefusedError extends Error {
  constructor(readonly serverError: string) {
    super(`the server refused the connection: ${serverError}`);
    this.name = "RawRefusedError";
  }
}
