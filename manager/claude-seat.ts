import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { buildClaudeLaunch, carriedResume, classifyScreen, seedSeatConfig, writeLaunchFiles, type AgentFile, type AuthMode } from "../claude/index.js";
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
  /** How Claude authenticates (default: `api_key` when ANTHROPIC_API_KEY is set, else the user's login). */
  authMode?: AuthMode;
  /** How long a seat has to reach its input screen before it is failed, naming its screen (default 15 s). */
  screenTimeoutMs?: number;
  /**
   * Pre-seed the seat's config dir (default true). `false` starts Claude with an empty one, as an
   * unmanaged first run would be: the seat then stops on a first-run screen and is failed.
   */
  seedConfig?: boolean;
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
}

/**
 * Start an interactive Claude seat: a pre-seeded, seat-private Claude config dir,
 * the launch built by buildClaudeLaunch (plugin tree, dontAsk, deny floor), and a 0700 start
 * script carrying its environment, in a tmux window or on a pty the manager holds. Resolves once it
 * runs (not yet ready: see awaitInputScreen).
 */
export async function startClaudeSeat(
  o: ClaudeSeatOptions,
  runtime: { tmux: TmuxServer } | { pty: true },
  files: SeatFiles,
  seat: ClaudeSeatRequest,
): Promise<{ proc: SeatProcess; terminal: SeatTerminal; permissionMode: string | undefined }> {
  const authMode = o.authMode ?? (o.parentEnv.ANTHROPIC_API_KEY ? "api_key" : "subscription");
  const configDir = join(files.dir, "claude-config");
  const resume = seat.resume ? await carriedResume(configDir, seat.cwd, seat.resume) : undefined;
  const launch = buildClaudeLaunch({
    profile: "seat",
    cwd: seat.cwd,
    identity: { name: seat.name, space: seat.space, launchMaterialPath: files.material },
    connectorEntry: o.connectorEntry,
    pluginDir: o.pluginDir,
    parentEnv: { ...o.parentEnv, CLAUDE_CONFIG_DIR: configDir },
    authMode,
    claudePath: o.claudePath,
    runtimeDir: files.dir,
    ...(seat.model ? { model: seat.model } : {}),
    ...(seat.agentFile
      ? {
          ...(seat.agentFile.persona ? { persona: seat.agentFile.persona } : {}),
          ...(seat.agentFile.frontmatter.agent ? { agent: seat.agentFile.frontmatter.agent } : {}),
          allowedTools: seat.agentFile.frontmatter.allowedTools,
        }
      : {}),
    launchOptions: { ...seat.agentFile?.frontmatter.launchOptions, ...(resume ? { resume: resume.session, "fork-session": resume.fork } : {}) },
  });
  if (o.seedConfig === false) mkdirSync(configDir, { recursive: true, mode: 0o700 });
  else {
    seedSeatConfig({
      dir: configDir,
      cwd: seat.cwd,
      apiKey: authMode === "api_key" ? o.parentEnv.ANTHROPIC_API_KEY : undefined,
      parentEnv: o.parentEnv,
      bypassAccepted: launch.permissionMode === "bypassPermissions",
    });
  }
  writeLaunchFiles(launch);
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
export async function awaitInputScreen(terminal: SeatTerminal, proc: SeatProcess, timeoutMs = 15_000, seen?: (screen: string) => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let gone = false;
  void proc.exited.then(() => (gone = true));
  let screen = "";
  while (Date.now() < deadline && !gone) {
    screen = await terminal.screen();
    // A TUI that exits restores the terminal's main screen: what it showed is kept by the caller.
    if (screen.trim()) seen?.(screen);
    const c = classifyScreen(screen);
    if (c.kind === "ready") return;
    if (c.kind === "blocked") throw new UnexpectedScreenError(c.name, screen);
    await sleep(100);
  }
  const first = screen
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(0, 3)
    .join(" / ");
  throw new UnexpectedScreenError(gone ? "an exit before its input screen" : `an unexpected screen (${first || "blank"})`, screen);
}
