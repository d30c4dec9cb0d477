// The bench's CPU per message (bench/cpu.ts): another process's CPU read from /proc, each block
// charged to its own side, and the columns the table prints. CPU spent, never a time waited.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { CpuAccount, processCpuUs, processTree, reapedChildrenCpuUs } from "../../bench/cpu.js";
import { renderTable } from "../../bench/report.js";

/** Spin this process until it has spent `ms` more CPU. */
function spin(ms: number): void {
  const start = process.cpuUsage();
  while (process.cpuUsage(start).user < ms * 1000) {
    // busy
  }
}

describe("bench: CPU per message", () => {
  it.runIf(process.platform === "linux")("reads another process's CPU, all its threads, from /proc", async () => {
    const script =
      "const s = process.cpuUsage(); while (process.cpuUsage(s).user < 300000) {} process.stdout.write('spent\\n'); setInterval(() => {}, 1 << 30);";
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "ignore"] });
    try {
      await once(child.stdout, "data");
      expect(processCpuUs(child.pid!)).toBeGreaterThanOrEqual(250_000);
    } finally {
      child.kill();
    }
    await once(child, "exit");
    expect(processCpuUs(child.pid!)).toBe(0);
  });

  it.runIf(process.platform === "linux")("counts a child that ran to its end once it was reaped, and finds a process's descendants", async () => {
    const before = reapedChildrenCpuUs("self");
    const spinner = spawn(process.execPath, ["-e", "const s = process.cpuUsage(); while (process.cpuUsage(s).user < 300000) {}"], { stdio: "ignore" });
    await once(spinner, "exit");
    // 10 ms clock ticks: at least 250 of the 300 ms it spun.
    expect(reapedChildrenCpuUs("self") - before).toBeGreaterThanOrEqual(250_000);

    const script =
      "require('node:child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' }); process.stdout.write('started\\n'); setInterval(() => {}, 1 << 30);";
    const parent = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "ignore"] });
    try {
      await once(parent.stdout, "data");
      const tree = processTree(parent.pid!);
      expect(tree[0]).toBe(parent.pid);
      expect(tree).toHaveLength(2);
      for (const pid of tree.slice(1)) process.kill(pid);
    } finally {
      parent.kill();
    }
  });

  it("charges each block to its side, per message", async () => {
    const cpu = new CpuAccount<"busy" | "idle">(() => []);
    await cpu.measure("busy", 10, async () => spin(100));
    await cpu.measure("idle", 10, () => new Promise((r) => setImmediate(r)));
    expect(cpu.perMessage("busy")).toBeGreaterThanOrEqual(10_000);
    expect(cpu.perMessage("idle")).toBeLessThan(cpu.perMessage("busy") / 10);
    expect(cpu.pair("busy", "idle").outside).toEqual({ cotal: 0, raw: 0 });
    expect(Number.isNaN(new CpuAccount<"none">(() => []).perMessage("none"))).toBe(true);
  });

  it("prints Cotal's and raw's µs per message and their ratio beside the wall-clock ratio", () => {
    const table = renderTable([
      { name: "DM latency p50", unit: "ms", cotal: 1.2, raw: 1, better: "lower", cpu: { cotal: 330, raw: 300, outside: { cotal: 200, raw: 190 } } },
      { name: "idle", unit: "msg/s", cotal: 0, raw: 1, better: "lower" },
    ]);
    const [header, , dm] = table.split("\n");
    expect(header).toMatch(/Cotal ÷ raw.*cpu\/msg Cotal µs\s+raw µs\s+cpu ÷$/);
    expect(dm).toMatch(/1\.20\s+1\.20× slower\s+330\s+300\s+1\.10$/);
    expect(table).toContain("cpu/msg outside the bench process (nats-server, seats): Cotal 200 µs, raw 190 µs");
  });
});
