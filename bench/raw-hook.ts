// A seat's hook and its seat made with the raw NATS client, for bench-connector's comparison
// (bundled as dist/bench-raw-hook.mjs, as the hook is as dist/hook.mjs):
//   `serve`: connect to BENCH_NATS_URL, answer every request on bench.hook.* with `{}` (what the
//     connector answers a PreToolUse), print `ready`, and stay: the raw seat, idle RSS included;
//   `<event>`: read the hook payload from stdin, connect, request bench.hook.<event> with it,
//     print the reply and exit: the raw command hook.
import { connect } from "@nats-io/transport-node";

const url = process.env.BENCH_NATS_URL;
if (!url) throw new Error("BENCH_NATS_URL names the bench's nats-server; bench-connector sets it");
const what = process.argv[2] ?? "";
const nc = await connect({ servers: url, name: `bench-raw-hook-${what}` });
if (what === "serve") {
  nc.subscribe("bench.hook.*", {
    callback: (_e, m) => {
      m.respond("{}");
    },
  });
  await nc.flush();
  process.stdout.write("ready\n");
} else {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const reply = await nc.request(`bench.hook.${what}`, Buffer.concat(chunks), { timeout: 5_000 });
  process.stdout.write(reply.string() + "\n");
  await nc.close();
}
