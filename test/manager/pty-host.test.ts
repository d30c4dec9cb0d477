// The pty terminal host without Claude: a shell script on a pseudo-terminal the manager holds (util-linux
// `script`), its output kept and readable as a screen, input typed by the manager or relayed from
// an attached client over the seat's socket, and a stop that proves the process gone.
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { processStartTime } from "../../runtime/index.js";
import { PtySeat, stripAnsi } from "../../manager/internal.js";
import { until } from "../../testbed/until.js";

const dir = mkdtempSync(join(tmpdir(), "cotal-pty-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("pty terminal host", () => {
  it("runs on a 200×50 pty, shows its screen, takes typed and attached input, and stops", async () => {
    const script = join(dir, "start.sh");
    writeFileSync(script, '#!/bin/sh\nstty size\necho ready\nwhile read line; do echo "got:$line"; done\n');
    chmodSync(script, 0o700);
    const seat = await PtySeat.start(script, dir, join(dir, "pty.sock"));
    await until(async () => (await seat.screen()).includes("ready"), 10_000, "the script to start");
    expect(await seat.screen()).toContain("50 200");
    expect(statSync(join(dir, "pty.sock")).mode & 0o777).toBe(0o600);

    await seat.type("typed by the manager");
    await until(async () => (await seat.screen()).includes("got:typed by the manager"), 10_000, "typed input to reach the script");

    const client = connect(join(dir, "pty.sock"));
    let seen = "";
    client.on("data", (d: Buffer) => (seen += d.toString()));
    await until(() => seen.includes("ready"), 10_000, "the attached client to get the scrollback");
    expect(await seat.attached()).toBe(true);
    client.write("from the terminal\r");
    await until(() => seen.includes("got:from the terminal"), 10_000, "attached input to reach the script");
    client.destroy();
    await until(async () => !(await seat.attached()), 5_000, "the client to be gone");

    const pid = seat.process.pid;
    await seat.process.stop(2_000);
    expect(processStartTime(pid)).toBeUndefined();
  });

  it("strips terminal control sequences from the screen text", () => {
    // CSI (cursor moves, colours) reads as a space: a TUI often moves the cursor instead of printing one.
    expect(stripAnsi("\x1b[2J\x1b[1;1Hhello\x1b[0m \x1b]0;title\x07world\r\n")).toBe("  hello  world\n");
  });
});
