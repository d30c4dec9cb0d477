// The registry (runtimes/index.ts) is the one list of runtimes: the contract (schemas/) only
// checks that a runtime is named as a name, and names none of them, so a new runtime needs no edit
// there; a manager refuses a name its registry does not hold, before anything starts, naming the
// ones it has.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { refuseUnknownAgent, SeatRefusedError } from "../../manager/index.js";
import { RUNTIMES } from "../../runtimes/index.js";
import { AgentFrontmatter, SeatAgent } from "../../schemas/index.js";

describe("the runtime registry and the contract", () => {
  it("an agent file may name any runtime by a plain name, and never a phrase", () => {
    for (const r of RUNTIMES) expect(AgentFrontmatter.parse({ name: "coder", runtime: r.name }).runtime).toBe(r.name);
    expect(AgentFrontmatter.safeParse({ name: "coder", runtime: "crush" }).success).toBe(true);
    const bad = AgentFrontmatter.safeParse({ name: "coder", runtime: "Claude Code" });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error?.issues)).toContain("runtime name");
    expect(SeatAgent.safeParse("echo").success).toBe(true);
  });

  it("a manager refuses an agent its registry does not hold, naming the ones it has; echo and every runtime pass", () => {
    expect(() => refuseUnknownAgent("echo")).not.toThrow();
    for (const r of RUNTIMES) expect(() => refuseUnknownAgent(r.name)).not.toThrow();
    let refused: unknown;
    try {
      refuseUnknownAgent("crush");
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(SeatRefusedError);
    expect((refused as Error).message).toContain('no runtime named "crush"');
    for (const r of RUNTIMES) expect((refused as Error).message).toContain(r.name);
  });

  it("schemas/ names no runtime but the default a missing agent stands for", () => {
    const dir = join(process.cwd(), "schemas");
    const files = readdirSync(dir).filter((f) => f.endsWith(".ts"));
    expect(files.length).toBeGreaterThan(10);
    const named: string[] = [];
    for (const f of files) {
      const text = readFileSync(join(dir, f), "utf8").replaceAll('.default("claude")', "");
      for (const r of RUNTIMES) if (text.includes(`"${r.name}"`)) named.push(`${f} names "${r.name}"`);
    }
    expect(named).toEqual([]);
  });
});
