/**
 * What tests reach of the Kilo Code binding beyond its public entry (index.ts): Cotal's plugin,
 * bundled on its own into the plugin's bin/, so no part of the adapter's entry.
 */
export { CotalPlugin } from "./plugin.js";
