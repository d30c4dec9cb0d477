import { createServer } from "node:net";
import { RESERVED_PORTS } from "./nats-server.js";

/**
 * A free TCP port on 127.0.0.1, learnt by binding port 0 and closing; never one of the shared
 * broker's reserved ports. (Only for things that cannot choose their own port.)
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = createServer();
      srv.once("error", reject);
      srv.listen(0, "127.0.0.1", () => {
        const addr = srv.address();
        const p = typeof addr === "object" && addr ? addr.port : 0;
        srv.close(() => (p ? resolve(p) : reject(new Error("could not learn a free port"))));
      });
    });
    if (!RESERVED_PORTS.has(port)) return port;
  }
}

/** `n` distinct free ports. */
export async function freePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

/** Whether `port` on 127.0.0.1 can be listened on right now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen({ host: "127.0.0.1", port, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/** The first of `n` consecutive free ports (`cotal up --cluster n --port p` takes p and the ports above it). */
export async function freePortRun(n: number): Promise<number> {
  for (;;) {
    const base = await freePort();
    let free = true;
    for (let i = 1; i < n && free; i++) free = !RESERVED_PORTS.has(base + i) && (await canListen(base + i));
    if (free) return base;
  }
}
