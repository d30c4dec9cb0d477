// Entry of dist/bench-credential-cost.mjs: `node dist/bench-credential-cost.mjs [profile …]`
// measures what one credential of each profile may cost nats-server (docs/security.md). Not part
// of `npm run bench`: at the bounds it takes GBs of the server's memory for a while.
// COST_CONNECTIONS=N stops each credential at N connections (a quick look, not the worst case).
import { PROFILE_LIMITS, PROFILES, type Profile } from "../../broker/index.js";
import { credentialCost } from "../credential-cost.js";

const asked = process.argv.slice(2);
const bad = asked.filter((p) => !(PROFILES as readonly string[]).includes(p));
if (bad.length) {
  console.error(`unknown profile(s) ${bad.join(", ")}: one of ${PROFILES.join(", ")}`);
  process.exit(2);
}
const cap = process.env.COST_CONNECTIONS ? Number(process.env.COST_CONNECTIONS) : undefined;
// By default the profiles handed to others: the operator's own tool and the mesh service are bounded by their accounts only.
await credentialCost(asked.length ? (asked as Profile[]) : PROFILES.filter((p) => PROFILE_LIMITS[p].connections !== undefined), cap);
process.exit(0);
