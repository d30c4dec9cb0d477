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
