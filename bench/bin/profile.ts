// Entry of dist/bench-profile.mjs: `node dist/bench-profile.mjs <file.cpuprofile>… [top]` prints
// where a profiled bench's CPU went, over the files together (bench/profile.ts); `npm run
// bench:profile` makes the profile, BENCH_PROFILE=<folder> one per measured block (bench/cpu-profile.ts).
import { summarizeProfile } from "../profile.js";

const args = process.argv.slice(2);
const top = args.length > 1 && /^\d+$/.test(args.at(-1)!) ? Number(args.pop()) : undefined;
if (!args.length) {
  console.error("usage: node dist/bench-profile.mjs <file.cpuprofile>… [top]: profiles written by node --cpu-prof or BENCH_PROFILE");
  process.exit(2);
}
console.log(summarizeProfile(args, top));
