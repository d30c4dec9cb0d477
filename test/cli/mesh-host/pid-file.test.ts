// A process's identity is its pid and its start time: a recycled pid is never taken for ours.
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { parseStartTime, processStartTime } from "../../../runtime/index.js";
import { isRunning, recordOf, stopProcess } from "../../../cli/mesh-host/pid-file.js";
import { until } from "../../../testbed/until.js";

describe("process identity", () => {
  it("reads field 22 of /proc/<pid>/stat even when the command name has spaces and parentheses", () => {
    const fields = Array.from({ length: 50 }, (_, i) => String(i + 3));
    const stat = `1234 (we (ird) name) S ${fields.slice(1).join(" ")}`;
    expect(parseStartTime(stat)).toBe("22");
    expect(parseStartTime(`1 (x) Z ${fields.slice(1).join(" ")}`)).toBeUndefined();
    expect(processStartTime(process.pid)).toMatch(/^\d+$/);
  });

  it("a recycled pid is never mistaken for ours: a record whose start time differs is not running and is never signalled", async () => {
    const child = spawn("sleep", ["30"], { stdio: "ignore" });
    try {
      const real = recordOf(child.pid!, ["sleep", "30"]);
      expect(isRunning(real)).toBe(true);
      const recycled = { ...real, startTime: String(Number(real.startTime) - 1) };
      expect(isRunning(recycled)).toBe(false);
      expect(await stopProcess(recycled, 100)).toBe("not-running");
      expect(isRunning(real)).toBe(true);
      expect(await stopProcess(real, 5_000)).toBe("stopped");
      await until(() => child.exitCode !== null || child.signalCode !== null, 5_000, "sleep to exit");
    } finally {
      child.kill("SIGKILL");
    }
  });
});
