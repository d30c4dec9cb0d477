import { createConnection, createServer } from "node:net";

/** The port every mesh asks for first. */
export const DEFAULT_PORT = 4222;

/**
 * Whether `host:port` is free to listen on: nothing answers a TCP connect there, and a
 * listener can bind it. (Checking both catches a server bound to a more specific address.)
 */
export async function portIsFree(host: string, port: number): Promise<boolean> {
  const connectHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  if (await answers(connectHost, port)) return false;
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/** True when something accepts TCP connections on host:port. */
export function answers(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ host, port });
    const done = (v: boolean) => {
      sock.destroy();
      resolve(v);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once("connect", () => done(true));
    sock.once("error", () => done(false));
  });
}
