// The wake bench (dist/bench-wake.mjs) in its smoke plan: the real claude under the manager's
// tmux against the model double, woken once by a DM and prompted once by typing; the DM's inbox
// ends empty. Needs tmux (skipped without it, as the bench is).
import { describe, expect, it } from "vitest";
import { hasTmux, WAKE_PLANS, wakeBench } from "../../bench/claude-wake.js";
import { ensureBuilt, projectRoot } from "../harness/build.js";
import { smoke } from "./smoke.js";

describe("bench: wake (dist/bench-wake.mjs)", () => {
  it.skipIf(!hasTmux())(
    "wakes an idle Claude seat by DM and by a typed prompt, leaving no mail behind",
    async () => {
      ensureBuilt();
      const r = await smoke(wakeBench, { ...WAKE_PLANS.smoke, root: projectRoot }, ["woken", "typed"]);
      expect(r.tallies.woken!.sent).toBe(WAKE_PLANS.smoke.samples);
    },
    240_000,
  );
});
