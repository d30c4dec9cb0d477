import net from "node:net";
import type { NatsConnection } from "@nats-io/transport-node";
import { callControl, connectMesh, serverUrls, SERVICE_PRINCIPALS, type MeshAddress } from "../../broker/index.js";
import type { ControlReplyData, Principal } from "../../schemas/index.js";

/**
 * True when a server answers at `addr` with this credential (a round trip). JetStream itself is
 * not asked: a static mesh's clients account has none of its own (docs/security.md), and the
 * data account's JetStream is proven by provisioning.
 */
export async function serverAnswers(addr: MeshAddress, timeoutMs = 2_000): Promise<boolean> {
  let nc: NatsConnection | undefined;
  try {
    nc = await connectMesh({ ...addr, name: "cotal-probe" });
    await Promise.race([nc.flush(), new Promise((_, reject) => setTimeout(() => reject(new Error("no answer")), timeoutMs).unref())]);
    return true;
  } catch {
    return false;
  } finally {
    await nc?.close().catch(() => undefined);
  }
}

/** What the mesh service said when pinged. */
export type ServicePing = ControlReplyData<"ping">;

/** Ping the space's mesh service on the control rail as `caller` (default: the host's CLI); undefined when none answers in time. */
export async function pingMeshService(
  nc: NatsConnection,
  space: string,
  timeoutMs = 1_500,
  caller: Principal = SERVICE_PRINCIPALS.cli,
): Promise<ServicePing | undefined> {
  try {
    return await callControl(nc, space, "ping", caller, {}, { timeoutMs });
  } catch {
    return undefined;
  }
}

/** What answered at a server address that is not a NATS server, in words (`an HTTP server (HTTP/1.1 404 Not Found)`). */
export type NotNats = string;

/**
 * A NATS server greets every new connection with `INFO {…}` at once; the client then waits up
 * to 20 s for it. Something else listening there (an HTTP port, the dashboard, a database)
 * says nothing first, so that wait is all a person would see, followed by advice to start a
 * mesh. Ask the first address directly: undefined when it greets like NATS or nothing answers
 * at all (the connect's own error says that); otherwise what answered.
 */
export async function notNatsAt(server: string, timeoutMs = 1_500): Promise<NotNats | undefined> {
  const first = serverUrls(server)[0];
  if (!first) return undefined;
  let url: URL;
  try {
    url = new URL(first.replace(/^(nats|tls|ws|wss):/, "http:"));
  } catch {
    return undefined;
  }
  if (!/^nats:|^tls:/.test(first)) return undefined;
  const port = Number(url.port || 4222);
  return new Promise((resolve) => {
    const socket = net.connect({ host: url.hostname.replace(/^\[|\]$/g, ""), port });
    let got = "";
    const done = (v: NotNats | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(v);
    };
    // Silence after the connect: ask as HTTP does, so an HTTP port names itself.
    let timer = setTimeout(() => done(undefined), timeoutMs);
    socket.once("connect", () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        socket.write(`HEAD / HTTP/1.0\r\nHost: ${url.hostname}\r\n\r\n`);
        timer = setTimeout(() => done("a server that is not NATS (it sent nothing, not even to an HTTP request)"), timeoutMs);
      }, 500);
    });
    socket.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      if (got.startsWith("INFO")) return done(undefined);
      const status = /^HTTP\/\d(?:\.\d)? [^\r\n]*/.exec(got);
      if (status) return done(`an HTTP server (${status[0]})`);
      if (got.length >= 4) done(`a server that is not NATS (it said ${JSON.stringify(got.slice(0, 40))})`);
    });
    socket.once("error", () => done(undefined));
  });
}
