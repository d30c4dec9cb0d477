// Entry of dist/bench-flood.mjs (run by `npm run bench`): the CLI bundle beside it starts the mesh.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { benchMain } from "../entry.js";
import { FLOOD_PLANS, floodBench } from "../flood.js";

const dist = path.dirname(fileURLToPath(import.meta.url));
const paths = { cli: path.join(dist, "cotal.mjs"), root: path.resolve(dist, "..") };
await benchMain("bench-flood", (quick) => ({ ...(quick ? FLOOD_PLANS.quick : FLOOD_PLANS.full), paths }), floodBench);
