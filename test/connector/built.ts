// The connector's shipped bundles, for tests that run them as Claude would.
import { BUNDLES } from "../harness/build.js";

export { ensureBuilt } from "../harness/build.js";
export const CONNECTOR_BUNDLE = BUNDLES.connector;
export const HOOK_BUNDLE = BUNDLES.hook;
