// BENCH_PROFILE=<folder>: each measured block of a bench is profiled on its own (node:inspector's
// sampling profiler, started and stopped around the block) and written as
// `<folder>/<label>-<side>-<n>.cpuprofile`, so one side of one part can be read without the other
// side, the warm-up or the set-up mixed in (`node dist/bench-profile.mjs <folder>/events-cotal-*`).
// `node --cpu-prof` profiles the whole run instead.
import { mkdirSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import path from "node:path";

let session: Promise<Session> | undefined;
const written = new Map<string, number>();

async function profiler(): Promise<Session> {
  const s = new Session();
  s.connect();
  await s.post("Profiler.enable");
  // 100 µs, not V8's default 1 ms: a block of a quick run lasts a few hundred ms.
  await s.post("Profiler.setSamplingInterval", { interval: 100 });
  return s;
}

/** Run `block`; with BENCH_PROFILE set, profile it and write `<folder>/<label>-<n>.cpuprofile`. */
export async function profiledBlock<T>(label: string, block: () => Promise<T>): Promise<T> {
  const dir = process.env.BENCH_PROFILE;
  if (!dir) return block();
  const s = await (session ??= profiler());
  await s.post("Profiler.start");
  try {
    return await block();
  } finally {
    const { profile } = await s.post("Profiler.stop");
    const n = (written.get(label) ?? 0) + 1;
    written.set(label, n);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, `${label}-${n}.cpuprofile`), JSON.stringify(profile));
  }
}
