// usage: node zz-prof.mjs profile.cpuprofile bundle.mjs.map
import { readFileSync } from "node:fs";
import { TraceMap, originalPositionFor } from "@jridgewell/trace-mapping";
const prof = JSON.parse(readFileSync(process.argv[2], "utf8"));
const map = new TraceMap(JSON.parse(readFileSync(process.argv[3], "utf8")));
const dt = (prof.endTime - prof.startTime) / prof.samples.length / 1000; // ms per sample
const counts = new Map();
for (const s of prof.samples) counts.set(s, (counts.get(s) ?? 0) + 1);
const byFile = new Map(), byFn = new Map();
let total = 0;
for (const n of prof.nodes) {
  const c = counts.get(n.id) ?? 0; if (!c) continue;
  const ms = c * dt; total += ms;
  let key = n.callFrame.url ? n.callFrame.url.replace(/.*\//, "") : `(${n.callFrame.functionName || "native"})`;
  if (n.callFrame.url.endsWith(".mjs") && n.callFrame.lineNumber >= 0) {
    const p = originalPositionFor(map, { line: n.callFrame.lineNumber + 1, column: n.callFrame.columnNumber });
    if (p.source) key = p.source.replace(/.*node_modules\//, "nm/").replace(/^(\.\.\/)+/, "");
  }
  const pk = key.startsWith("nm/") ? key.split("/").slice(0, key.split("/")[1].startsWith("@") ? 3 : 2).join("/") : key;
  byFile.set(pk, (byFile.get(pk) ?? 0) + ms);
  const fk = `${n.callFrame.functionName || "(anon)"} ${key}`;
  byFn.set(fk, (byFn.get(fk) ?? 0) + ms);
}
const top = (m, k) => [...m].sort((a, b) => b[1] - a[1]).slice(0, k).map(([a, b]) => `${b.toFixed(1).padStart(7)} ms  ${a}`).join("\n");
console.log(`total ${total.toFixed(0)} ms\n-- by package/file\n${top(byFile, 25)}\n-- by function\n${top(byFn, 25)}`);
