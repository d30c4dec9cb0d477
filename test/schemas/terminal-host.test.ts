// The terminal host a seat runs in is `terminal` on the wire. Its old name, `runtime`, is still read
// where an older writer may have used it: an older CLI's spawn, an older manager's seat-log records
// (the log is kept: old logs must replay) and its `ps` replies. Both names, differing, are refused.
import { describe, expect, it } from "vitest";
import { MANAGER_COMMANDS, SeatEvent, SeatView } from "../../schemas/index.js";

const UID = "a".repeat(26);
const base = { seat: "local.bob", uid: UID, epoch: 0, ts: 1_000, manager: "hosta" };
const spawn = MANAGER_COMMANDS.spawn.args;
const view = { seat: "local.bob", name: "bob", uid: UID, epoch: 0, state: "joined", agent: "claude", instance: "hosta", requestedAt: 1, since: 1, restarts: 0 };

describe("the terminal host's old name", () => {
  it("an older CLI's spawn that says runtime asks for that terminal", () => {
    expect(spawn.parse({ agent: "claude", runtime: "pty" })).toMatchObject({ terminal: "pty" });
    expect(spawn.parse({ agent: "claude", runtime: "pty" })).not.toHaveProperty("runtime");
    expect(spawn.parse({ agent: "claude", terminal: "pty" })).toMatchObject({ terminal: "pty" });
    expect(spawn.parse({ agent: "claude", terminal: "tmux", runtime: "tmux" })).toMatchObject({ terminal: "tmux" });
  });

  it("a spawn naming both, differing, is refused, saying which to keep", () => {
    const r = spawn.safeParse({ agent: "claude", terminal: "tmux", runtime: "pty" });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(["runtime"]);
    expect(r.error?.issues[0]?.message).toContain("the old name of `terminal`");
  });

  it("a spawn's old key is still checked as a terminal host", () => {
    expect(spawn.safeParse({ agent: "claude", runtime: "screen" }).success).toBe(false);
  });

  it("seat-log records an older manager wrote replay with their terminal", () => {
    expect(SeatEvent.parse({ type: "launched", ...base, runtime: "tmux", pid: 1 })).toMatchObject({ type: "launched", terminal: "tmux" });
    expect(SeatEvent.parse({ type: "requested", ...base, agent: "claude", runtime: "pty" })).toMatchObject({ type: "requested", terminal: "pty" });
    expect(SeatEvent.parse({ type: "launched", ...base, terminal: "process" })).toMatchObject({ terminal: "process" });
    // A launched record names its terminal host, by either name.
    expect(SeatEvent.safeParse({ type: "launched", ...base, pid: 1 }).success).toBe(false);
  });

  it("an older manager's ps reply shows each seat's terminal", () => {
    expect(SeatView.parse({ ...view, runtime: "pty" })).toMatchObject({ terminal: "pty" });
    expect(SeatView.parse({ ...view, terminal: "tmux" })).toMatchObject({ terminal: "tmux" });
    expect(SeatView.parse(view)).not.toHaveProperty("terminal");
  });
});
