// Entry of dist/bench-connector.mjs (run by `npm run bench`): its bundles are the ones beside it.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { benchMain } from "../entry.js";
import { bundlesIn, CONNECTOR_PLANS, connectorBench } from "../connector-hook.js";

const bundles = bundlesIn(path.dirname(fileURLToPath(import.meta.url)));
await benchMain("bench-connector", (quick) => ({ ...(quick ? CONNECTOR_PLANS.quick : CONNECTOR_PLANS.full), bundles }), connectorBench);
