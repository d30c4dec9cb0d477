// `node dist/bench-profile.mjs <file.cpuprofile> [top]`: where a profiled bench's CPU went. Each
// sample's function is mapped through its bundle's source map to the source file it came from,
// and self time is summed per group (Cotal's envelope and schemas, zod, receipts and acks,
// presence, the NATS client, JSON, Node's own work, the garbage collector) and per function.
// `npm run bench:profile` profiles the DM latency and throughput loop and prints this.
import { existsSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { fileURLToPath } from "node:url";
import { z } from "zod";

const CallFrame = z.object({ functionName: z.string(), url: z.string(), lineNumber: z.number(), columnNumber: z.number() });
const Profile = z.object({
  nodes: z.array(z.object({ id: z.number(), callFrame: CallFrame, children: z.array(z.number()).optional() })),
  samples: z.array(z.number()),
  timeDeltas: z.array(z.number()),
});
type Frame = z.infer<typeof CallFrame>;

/** Groups by source file, first match wins: what the DM path spends its CPU on. */
const GROUPS: Array<[string, RegExp]> = [
  ["zod (schema checks)", /node_modules\/zod\//],
  ["envelope verification (broker/verify)", /broker\/verify/],
  ["acks and receipts (broker/ack-batch, delivery, pulled-msg)", /broker\/(ack-batch|delivery|pulled-msg)/],
  ["presence and liveness (broker/liveness, roster)", /broker\/(liveness|roster)|schemas\/presence/],
  ["mesh service (broker/mesh-service, control)", /broker\/(mesh-service|provision|control)/],
  ["envelope, subjects, encoding (schemas/)", /(^|\/)schemas\//],
  ["endpoint: send, inbox reads (broker/)", /(^|\/)broker\//],
  ["NATS client: JetStream (consume, publish, ack)", /@nats-io\/jetstream\//],
  ["NATS client: core (protocol, parser, subscriptions)", /@nats-io\//],
  ["event plane (connector/event-plane, event-wal, agui)", /connector\/(event-plane|event-wal|agui)/],
  ["console feed (cli/console)", /cli\/(console|terminal)\//],
  ["bench harness (bench/)", /(^|\/)bench\//],
];

/** Where a frame came from: its source file through the bundle's source map, else its own url. */
class Sources {
  readonly #maps = new Map<string, SourceMap | undefined>();

  source(f: Frame): string {
    if (!f.url) return "";
    const map = this.#map(f.url);
    const entry = map?.findEntry(f.lineNumber, f.columnNumber);
    return entry && "originalSource" in entry ? entry.originalSource : f.url;
  }

  #map(url: string): SourceMap | undefined {
    if (this.#maps.has(url)) return this.#maps.get(url);
    let map: SourceMap | undefined;
    if (url.startsWith("file://")) {
      const file = `${fileURLToPath(url)}.map`;
      if (existsSync(file)) map = new SourceMap(JSON.parse(readFileSync(file, "utf8")) as ConstructorParameters<typeof SourceMap>[0]);
    }
    this.#maps.set(url, map);
    return map;
  }
}

function groupOf(f: Frame, source: string): string {
  if (f.functionName === "(garbage collector)") return "garbage collector";
  if (f.functionName === "(idle)") return "idle";
  if (f.functionName === "(program)") return "V8 and Node outside JS (program)";
  if (!f.url) {
    if (f.functionName === "writeBuffer") return "socket writes (writeBuffer)";
    return f.functionName === "parse" || f.functionName === "stringify" ? "JSON (parse, stringify)" : "V8 builtins and other native code";
  }
  for (const [name, re] of GROUPS) if (re.test(source)) return name;
  if (source.startsWith("node:")) return "Node: streams, sockets, timers, crypto";
  return "other";
}

function ancestors(id: number, parent: ReadonlyMap<number, number>): number[] {
  const out: number[] = [];
  for (let a = parent.get(id); a !== undefined; a = parent.get(a)) out.push(a);
  return out;
}

const pad = (s: string, n: number) => (s.length >= n ? s : s + " ".repeat(n - s.length));

/** Self time by group and by function over `files` together (the blocks of one side, BENCH_PROFILE). */
export function summarizeProfile(files: string | readonly string[], top = 25): string {
  const list = typeof files === "string" ? [files] : files;
  const sources = new Sources();
  const groups = new Map<string, number>();
  const fns = new Map<string, number>();
  let busy = 0;
  for (const file of list) {
    const p = Profile.parse(JSON.parse(readFileSync(file, "utf8")));
    const byId = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const self = new Map<number, number>();
    p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
    for (const [id, us] of self) {
      const f = byId.get(id);
      if (!f) continue;
      // BENCH_PROFILE's own stop (node:inspector serialising the profile) is no part of the bench.
      if (ancestors(id, parent).some((a) => byId.get(a)?.url === "node:inspector")) continue;
      const source = sources.source(f);
      // Code compiled at run time has no source (zod's object checks): it counts as its caller's.
      const caller = !f.url && !f.functionName ? byId.get(parent.get(id) ?? -1) : undefined;
      const g = caller?.url ? groupOf(caller, sources.source(caller)) : groupOf(f, source);
      if (g === "idle") continue;
      busy += us;
      groups.set(g, (groups.get(g) ?? 0) + us);
      const where = source.replace(/^.*node_modules\//, "").replace(/^(\.\.\/)+/, "");
      const key = `${f.functionName || "(anonymous)"}  ${where}`;
      fns.set(key, (fns.get(key) ?? 0) + us);
    }
  }
  const pct = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)} %`;
  const ms = (us: number) => `${(us / 1000).toFixed(0).padStart(6)} ms`;
  const what = list.length === 1 ? list[0] : `${list.length} profiles (${list[0]} …)`;
  const out = [`${what}: ${(busy / 1000).toFixed(0)} ms busy (idle left out)`, "", "self time by group:"];
  for (const [g, us] of [...groups].sort((a, b) => b[1] - a[1])) out.push(`  ${pct(us)} ${ms(us)}  ${g}`);
  out.push("", `top ${top} functions by self time:`);
  for (const [k, us] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, top)) out.push(`  ${pct(us)} ${ms(us)}  ${pad(k, 0)}`);
  return out.join("\n");
}
