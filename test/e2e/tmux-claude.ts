// The real interactive `claude` TUI under tmux, offline against the model double: a private tmux
// server per session (its own socket, so nothing leaks into or out of a user's tmux), a HOME
// pre-seeded past onboarding, the API-key question and the trust dialog (docs/manager.md,
// "A Claude seat starts unattended"), and the screen read with capture-pane.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { claudeBin, claudeEnv, DUMMY_API_KEY } from "../harness/claude-runner.js";
import { until } from "../../testbed/until.js";

const run = promisify(execFile);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * A HOME in which the interactive TUI starts straight at its input screen for `cwd`. `settings`
 * go to `~/.claude/settings.json`, `config` to the global config `~/.claude.json` (for example
 * `messageIdleNotifThresholdMs`, after which an idle session sends the idle_prompt notification).
 */
export function seedHome(home: string, cwd: string, settings: Record<string, unknown> = {}, config: Record<string, unknown> = {}): void {
  mkdirSync(path.join(home, ".claude"), { recursive: true });
  writeFileSync(
    path.join(home, ".claude.json"),
    JSON.stringify({
      hasCompletedOnboarding: true,
      theme: "dark",
      customApiKeyResponses: { approved: [DUMMY_API_KEY.slice(-20)], rejected: [] },
      bypassPermissionsModeAccepted: true,
      projects: { [cwd]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
      ...config,
    }),
  );
  writeFileSync(path.join(home, ".claude", "settings.json"), JSON.stringify({ skipDangerousModePermissionPrompt: true, ...settings }, null, 2));
}

export interface TmuxClaudeOptions {
  /** Model double URL. */
  baseUrl: string;
  args: string[];
  env?: Record<string, string>;
  /** HOME (seeded by the caller, or fresh and seeded here). */
  home?: string;
  cwd?: string;
  /** Extra global config (`~/.claude.json`) when the HOME is seeded here. */
  config?: Record<string, unknown>;
}

/** One interactive claude in a detached tmux session on a private tmux server. */
export class TmuxClaude {
  private constructor(
    readonly socket: string,
    readonly home: string,
    readonly cwd: string,
    private readonly root: string,
  ) {}

  static async start(opts: TmuxClaudeOptions): Promise<TmuxClaude> {
    const root = mkdtempSync(path.join(os.tmpdir(), "cotal-tmux-"));
    const cwd = opts.cwd ?? path.join(root, "work");
    mkdirSync(cwd, { recursive: true });
    const home = opts.home ?? path.join(root, "home");
    if (!opts.home) seedHome(home, cwd, {}, opts.config);
    const env = { ...claudeEnv({ baseUrl: opts.baseUrl, home, env: opts.env }), TERM: "xterm-256color" };
    const command = ["env", "-i", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), claudeBin(), ...opts.args].map(shellQuote).join(" ");
    const t = new TmuxClaude(path.join(root, "tmux.sock"), home, cwd, root);
    await t.tmux("new-session", "-d", "-s", "claude", "-x", "200", "-y", "50", "-c", cwd, command);
    return t;
  }

  private async tmux(...args: string[]): Promise<string> {
    const { stdout } = await run("tmux", ["-S", this.socket, ...args], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
    return stdout;
  }

  /** The visible screen (plus `history` lines of scrollback). */
  async screen(history = 200): Promise<string> {
    try {
      return await this.tmux("capture-pane", "-p", "-J", "-S", `-${history}`, "-t", "claude");
    } catch {
      return "";
    }
  }

  /** Wait until the screen matches `re`; fails with the last screen. */
  async waitFor(re: RegExp, timeoutMs: number, what: string): Promise<string> {
    let last = "";
    try {
      await until(async () => re.test((last = await this.screen())), timeoutMs, what, 100);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- screen ---\n${last}`, { cause: err });
    }
    return last;
  }

  /** Type `text` and press Enter. */
  async submit(text: string): Promise<void> {
    await this.tmux("send-keys", "-t", "claude", "-l", text);
    await this.tmux("send-keys", "-t", "claude", "Enter");
  }

  /** Press one key (tmux key name, e.g. `Escape`, `Enter`, `C-c`). */
  async key(name: string): Promise<void> {
    await this.tmux("send-keys", "-t", "claude", name);
  }

  /** The pid of the process in the pane (the claude CLI). */
  async panePid(): Promise<number> {
    return Number((await this.tmux("display-message", "-p", "-t", "claude", "#{pane_pid}")).trim());
  }

  /** Whether the tmux session (and so claude) is still there. */
  async alive(): Promise<boolean> {
    try {
      await this.tmux("has-session", "-t", "claude");
      return true;
    } catch {
      return false;
    }
  }

  /** Kill the tmux server (SIGHUP to claude, which closes its MCP servers' stdin) and wait until claude is gone. */
  async kill(): Promise<void> {
    const pid = await this.panePid().catch(() => undefined);
    await this.tmux("kill-server").catch(() => undefined);
    if (pid) await until(() => !alive(pid), 15_000, `claude (pid ${pid}) exits after its tmux session was killed`).catch(() => undefined);
  }

  /** Kill and remove the temp dir (HOME and cwd when they were made here). */
  async cleanup(): Promise<void> {
    await this.kill();
    rmSync(this.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  }

  /** Read a file under HOME (e.g. `.claude/settings.json`). */
  readHome(rel: string): string {
    return readFileSync(path.join(this.home, rel), "utf8");
  }
}
