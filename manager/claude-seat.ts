import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { claudeRuntime, describeClaudeAuth, detectClaudeAuth, type ClaudeAuthMode } from "../claude/index.js";
import { type AgentFile } from "../runtime/index.js";
import type { RuntimeAdapter, RuntimeHost, ScreenState, SeatLaunchInput } from "../runtime/index.js";
import { hostsOf } from "./runtimes.js";
import type { ClaudeAuthStatus } from "../schemas/index.js";
import type { SeatProcess } from "./process-runtime.js";
import type { SeatFiles } from "./seat-launcher.js";
import { PtySeat } from "./pty-runtime.js";
import type { SeatTerminal } from "./seat-terminal.js";
import { writeStartScript, type TmuxServer } from "./tmux-runtime.js";

/** Where a manager finds what a Claude seat runs. */
export interface ClaudeSeatOptions {
  /** The claude executable. */
  claudePath: string;
  /** The bundled connector entry (dist/connector.mjs). */
  connectorEntry: string;
  /** Cotal's plugin tree (its MCP server and hooks). */
  pluginDir: string;
  /** The manager's environment: the seat gets only the launch builder's allow-list of it. */
  parentEnv: Readonly<Record<string, string | undefined>>;
  /** How Claude authenticates (claude/auth.ts; default: what `parentEnv` selects, in Claude Code's own order). */
  authMode?: ClaudeAuthMode;
  /** How long a seat has to reach its input screen before it is failed, naming its screen (default 15 s). */
  screenTimeoutMs?: number;
  /**
   * Pre-seed the seat's config dir (default true). `false` starts Claude with an empty one, as an
   * unmanaged first run would be: the seat then stops on a first-run screen and is failed.
   */
  seedConfig?: boolean;
}

/** What a manager says of its Claude auth (status, heartbeat) and checks before a spawn or run: never a secret. */
export function claudeAuthOf(o: Pick<ClaudeSeatOptions, "authMode" | "parentEnv">): ClaudeAuthStatus {
  return describeClaudeAuth(o.authMode ?? "auto", o.parentEnv);
}

/** The auth mode a manager's Claude seats and runs use: the one chosen, else what its environment selects. */
export function seatAuthMode(o: Pick<ClaudeSeatOptions, "authMode" | "parentEnv">): ClaudeAuthMode {
  return o.authMode ?? detectClaudeAuth(o.parentEnv);
}

export interface ClaudeSeatRequest {
  name: string;
  space: string;
  cwd: string;
  model?: string | undefined;
  /** The seat's agent file: persona text, subagent, launch options (a permission mode among them) and allow rules. */
  agentFile?: AgentFile | undefined;
  /**
   * A carried session to fork (`--resume <session> --fork-session`): its staged transcript (`file`)
   * is copied into the seat's config dir with its sha256 checked; without `file` (a restart) the
   * copy already there is checked and the seat continues its own fork (carriedResume). Bytes that
   * are not `digest` refuse the seat (TranscriptMismatchError).
   */
  resume?: { session: string; digest: string; file?: string | undefined } | undefined;
  /** supervised: permission asks go to people over the mesh. */
  posture?: "unattended" | "supervised" | undefined;
}

/** The Claude host of a manager's Claude options (manager/runtimes.ts). */
function claudeHost(o: ClaudeSeatOptions): RuntimeHost {
  return hostsOf({ claude: o }).get(claudeRuntime.name)!;
}

/**
 * Start an interactive Claude seat: the Claude adapter's seat launch (a pre-seeded, seat-private
 * config dir; plugin tree, dontAsk, deny floor) under the manager's terminal runtime.
 */
export async function startClaudeSeat(
  o: ClaudeSeatOptions,
  runtime: { tmux: TmuxServer } | { pty: true },
  files: SeatFiles,
  seat: ClaudeSeatRequest,
): Promise<{ proc: SeatProcess; terminal: SeatTerminal; permissionMode: string | undefined }> {
  const fm = seat.agentFile?.frontmatter;
  return startRuntimeSeat(claudeRuntime, claudeHost(o), runtime, files, {
    name: seat.name,
    space: seat.space,
    cwd: seat.cwd,
    model: seat.model,
    persona: seat.agentFile?.persona,
    agent: fm?.agent,
    allowedTools: fm?.allowedTools ?? [],
    launchOptions: fm?.launchOptions ?? {},
    resume: seat.resume,
    unseeded: o.seedConfig === false,
    posture: seat.posture,
  });
}

/**
 * Start an interactive seat of any runtime: its adapter prepares the seat's home and launch, and
 * a 0700 start script carrying its environment runs it in a tmux window or on a pty the manager
 * holds. Resolves once it runs (not yet ready: see awaitInputScreen).
 */
export async function startRuntimeSeat(
  adapter: RuntimeAdapter,
  host: RuntimeHost,
  runtime: { tmux: TmuxServer } | { pty: true },
  files: SeatFiles,
  seat: Omit<SeatLaunchInput, "seatDir" | "launchMaterialPath">,
): Promise<{ proc: SeatProcess; terminal: SeatTerminal; permissionMode: string | undefined }> {
  const launch = await adapter.buildSeat(host, { ...seat, seatDir: files.dir, launchMaterialPath: files.material });
  adapter.writeLaunchFiles(launch);
  const script = join(files.dir, "start.sh");
  writeStartScript(script, { ...launch.env, TERM: "xterm-256color" }, launch.command, launch.args);
  if ("tmux" in runtime) {
    const proc = await runtime.tmux.start(seat.name, script, seat.cwd);
    return { proc, terminal: runtime.tmux.terminal(seat.name), permissionMode: launch.permissionMode };
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
  timeoutMs = 15_000,
  seen?: (screen: string) => void,
  classify: (screen: string) => ScreenState = claudeRuntime.classifyScreen,
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
