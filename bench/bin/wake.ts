// Entry of dist/bench-wake.mjs (run by `npm run bench`): the seat runs this checkout's claude and plugin/.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { benchMain } from "../entry.js";
import { WAKE_PLANS, wakeBench } from "../claude-wake.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
await benchMain("bench-wake", (quick) => ({ ...(quick ? WAKE_PLANS.quick : WAKE_PLANS.full), root }), wakeBench);
