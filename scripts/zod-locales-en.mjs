// Stands in for zod's `locales` module in the bundles (scripts/build.mjs, plugin `zodEnglishOnly`):
// `z.locales` re-exports every language zod ships (≈ 300 KB, a quarter of an echo seat's bundle),
// and Cotal's messages are English. zod registers English itself; this keeps `z.locales.en`.
export { default as en } from "zod/v4/locales/en.js";
