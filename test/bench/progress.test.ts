// A bench round waits for its count as long as the count moves (a loaded machine is slow) and
// fails only when it stood still (stuck): bench/context.ts progressTo.
import { describe, expect, it } from "vitest";
import { Counter, progressTo } from "../../bench/context.js";

describe("bench progressTo", () => {
  it("waits through several stall windows while the count keeps moving", async () => {
    const c = new Counter();
    const timer = setInterval(() => c.add(), 10);
    try {
      await progressTo(c, 20, "ticks", 100);
      expect(c.value).toBeGreaterThanOrEqual(20);
    } finally {
      clearInterval(timer);
    }
  });

  it("fails, saying where the count stopped, once it stood still for a window", async () => {
    const c = new Counter();
    c.add(3);
    await expect(progressTo(c, 5, "acks", 30)).rejects.toThrow("stuck: acks stayed at 3 of 5");
  });
});
