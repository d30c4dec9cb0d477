// Entry of dist/bench-manager.mjs (run by `npm run bench`): the echo seat bundle beside it runs the seats.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { benchMain } from "../entry.js";
import { MANAGER_PLANS, managerBench } from "../manager.js";

const dist = path.dirname(fileURLToPath(import.meta.url));
const paths = { seat: path.join(dist, "echo-seat.mjs"), root: path.resolve(dist, "..") };
await benchMain("bench-manager", (quick) => ({ ...(quick ? MANAGER_PLANS.quick : MANAGER_PLANS.full), paths }), managerBench);
