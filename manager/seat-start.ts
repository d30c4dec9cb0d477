// How the kernel starts an interactive seat of any runtime and waits for its input screen.
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { RuntimeAdapter, RuntimeHost, ScreenState, SeatLaunchInput } from "../runtime/index.js";
import type { SeatProcess } from "./process-host.js";
import type { SeatFiles } from "./seat-launcher.js";
import { PtySeat } from "./pty-host.js";
import type { SeatTerminal } from "./seat-terminal.js";
import { writeStartScript, type TmuxServer } from "./tmux-host.js";

/**
 * Start an interactive seat of any runtime: its adapter prepares the seat's home and launch, and
 * a 0700 start script carrying its environment runs it in a tmux window or on a pty the manager
 * holds. Resolves once it runs (not yet ready: see awaitInputScreen).
 */
export async function startRuntimeSeat(
  adapter: RuntimeAdapter,
  host: RuntimeHost,
  on: { tmux: TmuxServer } | { pty: true },
  files: SeatFiles,
  seat: Omit<SeatLaunchInput, "seatDir" | "launchMaterialPath">,
): Promise<{ proc: SeatProcess; terminal: SeatTerminal; permissionMode: string | undefined }> {
  const launch = await adapter.buildSeat(host, { ...seat, seatDir: files.dir, launchMaterialPath: files.material });
  adapter.writeLaunchFiles(launch);
  const script = join(files.dir, "start.sh");
  writeStartScript(script, { ...launch.env, TERM: "xterm-256color" }, launch.command, launch.args);
  if ("tmux" in on) {
    const proc = await on.tmux.start(seat.name, script, seat.cwd);
    return { proc, terminal: on.tmux.terminal(seat.name), permissionMode: launch.permissionMode };
  }
  const pty = await PtySeat.start(script, seat.cwd, join(files.dir, "pty.sock"));
  return { proc: pty.process, terminal: pty, permissionMode: launch.permissionMode };
}

/** Why a seat did not reach its input screen: the screen it stopped on, named. */
export class UnexpectedScreenError extends Error {
  constructor(
    readonly screenName: string,
    readonly screen: string,
  ) {
    super(`the seat stopped on ${screenName} instead of its input screen`);
  }
}

/**
 * Wait for the seat's input screen. A known blocking screen (first run, API key, trust, bypass
 * warning, a permission prompt) fails at once, naming it; anything else fails after the bound
 * with the screen's first lines.
 */
export async function awaitInputScreen(
  terminal: SeatTerminal,
  proc: SeatProcess,
  classify: (screen: string) => ScreenState,
  timeoutMs = 15_000,
  seen?: (screen: string) => void,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let gone = false;
  void proc.exited.then(() => (gone = true));
  let screen = "";
  // A TUI that exits, or clears its screen to retry, leaves a blank terminal: what it said before
  // (an unreachable model, a refused key) is on the last screen that showed anything.
  let shown = "";
  while (Date.now() < deadline && !gone) {
    screen = await terminal.screen();
    if (screen.trim()) {
      shown = screen;
      seen?.(screen);
    }
    const c = classify(screen);
    if (c.kind === "ready") return;
    if (c.kind === "blocked") throw new UnexpectedScreenError(c.name, screen);
    await sleep(100);
  }
  const said = screenLines(shown, gone ? "last" : "first");
  const what = gone ? "an exit before its input screen" : `an unexpected screen${screen.trim() ? "" : ", now blank"}`;
  throw new UnexpectedScreenError(said ? `${what} (it showed: ${said})` : `${what} (it showed nothing)`, shown);
}

/** Three non-blank lines of a screen, joined: its first (a dialog's title) or its last (what a CLI said before it exited). */
function screenLines(screen: string, which: "first" | "last"): string {
  const lines = screen
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  return (which === "first" ? lines.slice(0, 3) : lines.slice(-3)).join(" / ");
}
