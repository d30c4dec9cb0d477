// Entry of dist/bench-profile.mjs: `node dist/bench-profile.mjs <file.cpuprofile> [top]` prints
// where a profiled bench's CPU went (bench/profile.ts); `npm run bench:profile` makes the profile.
import { summarizeProfile } from "../profile.js";

const [file, top] = process.argv.slice(2);
if (!file) {
  console.error("usage: node dist/bench-profile.mjs <file.cpuprofile> [top]: a profile written by node --cpu-prof");
  process.exit(2);
}
console.log(summarizeProfile(file, top ? Number(top) : undefined));
