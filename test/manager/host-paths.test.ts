// The hole this closes: a run's error told any agent that may call `run` the manager host's absolute
// paths (its state folder, home, temp files). Callers other than the operator get them worded.
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { redactHostPaths } from "../../manager/internal.js";

describe("a run's error as a caller on another principal's side reads it", () => {
  const stateDir = join(homedir(), "project", ".cotal", "manager");
  const cwd = join(homedir(), "project");

  it("names the manager's state folder, its folder, the home and the temp folder instead of their paths", () => {
    const text = [
      `The run could not be started: spawn ${join(stateDir, "runs", "r1", "claude")} ENOENT`,
      `persona file ${join(cwd, ".cotal", "agents", "x.md")} is invalid`,
      `see ${join(homedir(), ".claude", "x.log")} and ${join(tmpdir(), "cotal-0", "y.sock")}`,
    ].join("\n");
    const out = redactHostPaths(text, { stateDir, cwd });
    expect(out).not.toContain(homedir());
    expect(out).not.toContain(tmpdir() + "/");
    expect(out).toContain("spawn <manager state>/runs/r1/claude ENOENT");
    expect(out).toContain("persona file <manager folder>/.cotal/agents/x.md is invalid");
    expect(out).toContain("see ~/.claude/x.log and <tmp>/cotal-0/y.sock");
  });

  it("leaves text without host paths as it is", () => {
    expect(redactHostPaths("The run passed its timeout of 4 s.", { stateDir, cwd })).toBe("The run passed its timeout of 4 s.");
  });
});
