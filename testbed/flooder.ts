// A one-credential flood, as an attacker with a minted agent credential makes it: a raw NATS client
// in a process of its own publishing 8 bytes that are not JSON to each of its subjects in turn, as
// fast as the server takes them (a flush every 500 rounds), for a while. Used by the attack test
// (test/attacks/flood.test.ts) and the flood bench (bench/flood.ts).
import { spawn } from "node:child_process";

/** What a flood sent, and how its connection ended (`open`, or the server's reason for closing it). */
export interface FloodResult {
  sent: number;
  closed: string;
}

const SCRIPT = `
import { readFileSync } from "node:fs";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
const [url, creds, ms, ...subjects] = process.argv.slice(1);
const nc = await connect({ servers: url, authenticator: credsAuthenticator(readFileSync(creds)), maxReconnectAttempts: 0 });
const junk = new TextEncoder().encode("notjson!");
let sent = 0;
const end = Date.now() + Number(ms);
try {
  while (Date.now() < end && !nc.isClosed()) {
    for (let i = 0; i < 500; i++) for (const s of subjects) nc.publish(s, junk);
    sent += 500 * subjects.length;
    await nc.flush();
  }
} catch {}
const err = nc.isClosed() ? await nc.closed() : undefined;
process.stdout.write(JSON.stringify({ sent, closed: err ? String(err.message) : "open" }) + "\\n");
await nc.close().catch(() => {});
`;

/**
 * Flood `subjects` as `creds` on `server` for `ms`, from a child process started in `root` (a
 * folder where `@nats-io/transport-node` resolves: the project's). Resolves when the flood ends.
 */
export function flood(o: { root: string; server: string; creds: string; subjects: string[]; ms: number }): Promise<FloodResult> {
  const child = spawn(process.execPath, ["--input-type=module", "-e", SCRIPT, o.server, o.creds, String(o.ms), ...o.subjects], {
    cwd: o.root,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve(JSON.parse(out) as FloodResult) : reject(new Error(`the flooder exited with ${code}: ${out}`))));
  });
}
