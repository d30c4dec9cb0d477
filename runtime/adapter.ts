// The runtime seam (docs/runtimes.md): everything the kernel (manager, runs, `cotal setup`) asks
// of an agent CLI, as one interface. Each agent CLI is an adapter folder (claude/, codex/) that
// exports one object of this shape; the registry (runtimes/index.ts) lists them, one line each.
// The kernel never asks "is this Claude?": it asks the adapter, or reads its capability table.
import type { ChildProcess, StdioOptions } from "node:child_process";
import type { ModelSource, RunResult } from "../schemas/index.js";

/** An environment as a launcher sees it (`process.env`-shaped). */
export type Env = Readonly<Record<string, string | undefined>>;

/** A file a launch needs on disk before the CLI starts (always 0600: it may hold the persona or a provider config). */
export interface LaunchFile {
  path: string;
  content: string;
  mode: number;
}

/** What to run: spawn `command` with `args`, `cwd` and exactly `env`. */
export interface RuntimeLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** A private 0700 directory holding `files`, created fresh, removed once the process is proven gone. */
  privateDir: string;
  files: LaunchFile[];
  /** Text written to the CLI's stdin, then closed (headless runs). */
  stdin?: string;
  /** The unattended permission posture, named as the runtime names it (shown in `ps`). */
  permissionMode?: string;
}

/** A spawned launch. */
export interface LaunchedRuntime {
  child: ChildProcess;
  privateDir: string;
}

/** How the kernel has a launch spawned. */
export interface SpawnOptions {
  stdio?: "pipe" | "inherit" | "ignore" | StdioOptions;
  /** Own process group (runs and seats: a kill reaches the CLI's MCP servers and hooks). */
  detached?: boolean;
}

/** What a manager knows of one runtime on its host: where its CLI is and what the seat's connector is. */
export interface RuntimeHost {
  /** The CLI executable. */
  executable: string;
  /** The bundled connector entry (dist/connector.mjs), the seat's MCP server. */
  connectorEntry: string;
  /** The manager's environment: children get only the adapter's allow-list of it. */
  parentEnv: Env;
  /**
   * The way its seats and runs authenticate, chosen with `--<runtime>-auth` (one of the adapter's
   * `authModes`; absent or `auto`: what `parentEnv` selects, as the CLI in that shell would).
   */
  authMode?: string | undefined;
  /** How long a seat has to reach its input screen on this host (default: the adapter's `screenTimeoutMs`, else 15 s). */
  screenTimeoutMs?: number | undefined;
  /** Adapter-specific settings (Claude: its plugin tree), opaque to the kernel. */
  settings?: Readonly<Record<string, unknown>>;
}

/** One headless run (`cotal run`), as the kernel hands it to an adapter. */
export interface RunLaunchInput {
  runId: string;
  space: string;
  prompt: string;
  cwd: string;
  /** The agent file's persona (never argv). */
  persona?: string | undefined;
  model?: string | undefined;
  /** A subagent to run as (runtimes that have them). */
  agent?: string | undefined;
  launchOptions: Readonly<Record<string, string | number | boolean>>;
  allowedTools: readonly string[];
  /** A JSON Schema file the output must match. */
  jsonSchemaFile?: string | undefined;
  /** The run's spending cap in USD (runtimes that enforce one). */
  maxBudgetUsd?: number | undefined;
  /** Where the run's private launch directory goes. */
  runtimeDir: string;
}

/** How a run's process ended, as the kernel saw it. */
export interface RunExit {
  code: number | null;
  signal: string | null;
  /** Killed for its timeout. */
  timedOut: boolean;
  stdout: string;
  stderr: string;
  latencyMs: number;
}

/** What the result parser is told of the run. */
export interface RunSpecView {
  runId: string;
  persona?: string | undefined;
  jsonSchema?: Record<string, unknown> | undefined;
  model?: string | undefined;
  modelSource: ModelSource;
  timeoutMs: number;
  /** What the run counts as when the CLI reports no cost: the median of recent runs. */
  fallbackCostUsd?: number | undefined;
}

/** One unattended seat, as the kernel hands it to an adapter. */
export interface SeatLaunchInput {
  name: string;
  space: string;
  cwd: string;
  /** The seat's own folder (0700): a runtime keeps its private home/config dir here. */
  seatDir: string;
  /** The seat's launch material file (identity, server, credential path). */
  launchMaterialPath: string;
  model?: string | undefined;
  persona?: string | undefined;
  agent?: string | undefined;
  launchOptions: Readonly<Record<string, string | number | boolean>>;
  allowedTools: readonly string[];
  /** A carried session to continue (runtimes whose `capabilities.carry` is true). */
  resume?: { session: string; digest: string; file?: string | undefined } | undefined;
  /** supervised: what the allow-list does not name is asked over the mesh (runtimes with `capabilities.approvals`). */
  posture?: "unattended" | "supervised" | undefined;
}

/** What a seat's terminal shows: its input screen, a screen that blocks an unattended start (named), or not known yet. */
export type ScreenState = { kind: "ready" } | { kind: "blocked"; name: string } | { kind: "unknown" };

/** Whether a runtime's credentials are there (a pre-flight, never a model call; never a secret). */
export interface RuntimeAuth {
  ready: boolean;
  /** Which configuration the runtime uses, for `cotal status` (names and paths, never values). */
  summary: string;
  problem?: string;
  remedy?: string;
  /** For a runtime with `authModes`: which one it uses, how it was chosen, and what it reads. */
  detail?: AuthDetail;
}

/** How a runtime with several ways to authenticate does so on a host: names and places, never a value. */
export interface AuthDetail {
  mode: string;
  /** auto: what the manager's environment selects; explicit: named with `--<runtime>-auth`. */
  chosen: "auto" | "explicit";
  /** The environment variables the mode reads that are set (names only). */
  vars: string[];
  /** The model endpoint's origin, when the environment names one (without any user or password). */
  baseUrl?: string | undefined;
  /** A login file seats copy, when the mode uses one. */
  login?: string | undefined;
}

/**
 * The promises a seat makes and whether this runtime's CLI can keep them: one row per promise in
 * docs/runtimes.md. The kernel reads these instead of asking which runtime it is.
 */
export interface RuntimeCapabilities {
  /** Hooks hand mail over at session start and on prompt submit (acked after the hook wrote it). */
  mailHook: boolean;
  /** Which tools a pre-tool-use hook sees: `all`, `bash` (Codex), or `none`. */
  preToolUse: "all" | "bash" | "none";
  /** A hook fires when the CLI waits for a person (approval state in presence: Claude's Notification or PermissionRequest, Codex's PermissionRequest). */
  notificationHook: boolean;
  /** A hook fires when a turn fails (presence condition). */
  stopFailureHook: boolean;
  /**
   * Where the deny floor (runtime/deny-floor.ts) is enforced: by the CLI's own rules (`cli`), by a
   * pre-tool hook on the shell tool only (`hook-bash`: Codex), or not at all beyond its sandbox.
   */
  denyFloor: "cli" | "hook-bash" | "sandbox";
  /** A wake that types into the seat's terminal. */
  terminalWake: boolean;
  /** Headless one-shot runs (`cotal run`). */
  headlessRun: boolean;
  /** How a run's cost is known: dollars from the CLI, or token usage only. */
  runCost: "usd" | "usage";
  /** A run can be held to a JSON schema. */
  jsonSchema: boolean;
  /** A carried session can be resumed in a seat. */
  carry: boolean;
  /** The event plane can read its transcript. */
  eventPlane: boolean;
  /**
   * Its permission hook returns a decision to the CLI, so a seat may run supervised (permission
   * asks answered by people over the mesh: `cotal approvals`).
   */
  approvals: boolean;
}

/** What `cotal setup --runtime <name>` did (or, with `check`, would do) to the user's own configuration of the CLI. */
export interface RuntimeSetupReport {
  /** The CLI's home it wrote into. */
  home: string;
  files: Array<{ path: string; action: "ok" | "created" | "updated" | "missing" | "stale" }>;
  /** Cotal's hooks the CLI reads as trusted (undefined: no executable to ask). */
  trusted?: number;
}

/** A runtime adapter. One per agent CLI; registered in runtimes/index.ts. */
/** A decision a PermissionRequest hook hands back to the CLI. */
export type PermissionDecision = { behavior: "allow" } | { behavior: "deny"; message: string };

/** One parsed session-file line → the transcript records (Claude's shape, TranscriptRecord) it stands for. */
export type TranscriptReader = (line: unknown) => unknown[];

/** Whose permission asks go to the mesh (docs/runtimes.md), and the hook reply that hands a decision back. */
export interface SeatApprovals {
  /**
   * Whose asks: every session's (the CLI shows its dialog beside the hook, so the person at the
   * terminal may answer first: Claude), or managed seats' only (the dialog waits for the hook, so a
   * hand-started session's person would wait out the bound first: Codex).
   */
  sessions: "all" | "managed";
  /** The PermissionRequest hook's reply carrying a decision, in the CLI's shape. */
  reply: (decision: PermissionDecision) => Record<string, unknown>;
}

/** What the connector a CLI starts needs of that CLI (it runs inside the CLI's session, not in the manager). */
export interface ConnectorFacet {
  /** The card's reserved `connector` meta (SPEC §7): the agent CLI, as the reference systems name it. */
  readonly meta: string;
  /** How its session file reads for the event plane. Absent: each line is a record already (Claude's shape). */
  readonly transcript?: TranscriptReader;
  /** Whose permission asks go to the mesh, and how a decision is handed back. Absent: its own dialog stands. */
  readonly approvals?: SeatApprovals;
}

/** A session file in a runtime's session store. */
export interface SessionFile {
  session: string;
  file: string;
  size: number;
  mtimeMs: number;
}

/** A session whose title matched a name: what a user picks the id from. */
export interface SessionCandidate {
  session: string;
  digest: string;
  mtime: string;
  title: string;
}

/** Where a runtime that can resume a carried session (`capabilities.carry`) keeps its sessions, for transcript carry. */
export interface SessionStore {
  /** The store's folder in this environment (Claude: its config dir). */
  dir(env: Env): string;
  /** The session file of `session` under `dir`, or undefined; an id found twice is refused. */
  find(dir: string, session: string): SessionFile | undefined;
  /** Sessions whose title contains `name` (case-insensitive), newest first. */
  named(dir: string, name: string): Promise<SessionCandidate[]>;
}

/** What adding the plugin's allow rule would do to one settings file. */
export interface AllowRulePlan {
  file: string;
  rule: string;
  /** `present`: a covering rule is there; `add`: the rule would be appended to the file's allow list. */
  state: "present" | "add";
  /** Whether the file exists now. */
  exists: boolean;
  /** The whole file after the change (only for `add`), as it would be written. */
  content?: string;
  /** The allow list after the change: the part of the file setup touches. */
  allow: string[];
}

/**
 * What Cotal's plugin for a CLI needs of that CLI, for a runtime whose users install Cotal as a
 * plugin of theirs (Claude Code: the plugin the connector ships, `cotal setup`).
 */
export interface PluginFacet {
  /** The permission rule that lets the plugin's tools run without asking. */
  readonly allowRule: string;
  /** The user's own settings file the rule goes in (`cotal setup --allow-tools`). */
  settingsPath(env: Env): string;
  /** Whether the rule is in `file`, and what the file would become; a CotalError when it cannot be read as settings. */
  planAllowRule(file: string): AllowRulePlan;
  /** Write a planned change, every other setting kept. */
  applyAllowRule(plan: AllowRulePlan): void;
  /** Variables that mark a process as inside the CLI's own session: dropped when Cotal runs the CLI's plugin commands. */
  readonly nestedSessionEnv: readonly string[];
}

export interface RuntimeAdapter {
  /** The agent name in agent files (`runtime:`), `cotal spawn --agent`, and `ps`. */
  readonly name: string;
  /** The product, for sentences (`Claude Code`). */
  readonly label: string;
  /** The executable's name on PATH. */
  readonly command: string;
  /** The environment variable that names its executable (tests, unusual installs). */
  readonly binEnv: string;
  /** How to get the CLI when it is missing. */
  readonly installHint: string;
  readonly capabilities: RuntimeCapabilities;
  /** What Cotal's plugin for it needs, for a runtime whose users install Cotal as its plugin. */
  readonly plugin?: PluginFacet;
  /** Its session store, for a runtime that can resume a carried session (`capabilities.carry`). */
  readonly sessions?: SessionStore;
  /** What the connector it starts needs of it: its card's meta, its session file's reader, its approvals. */
  readonly connector: ConnectorFacet;

  /**
   * What of the user's shell a manager started in the background must carry for this runtime
   * (its home, its credentials' variables), put in that manager's environment, never argv.
   * `authMode`: the one chosen for it (runtimes with `authModes`), which decides what it carries.
   */
  shellEnv?(env: Env, authMode?: string): Record<string, string>;
  /**
   * The ways it authenticates that a person may choose for a manager's seats and runs
   * (`cotal up|manager --<name>-auth <mode>`, `auto` first); absent: it has one way, its own configuration.
   */
  readonly authModes?: readonly string[];
  /** The credentials and configuration the CLI will use on this host (never a value). */
  auth(host: Pick<RuntimeHost, "parentEnv" | "settings" | "authMode">): RuntimeAuth;

  /**
   * Build a headless run: argv, env (allow-listed), private files, prompt on stdin. Pure apart from
   * a random directory name, or async when the runtime must prepare its home itself (Codex trusts
   * its deny-floor hook there): it then writes the private directory and returns no files.
   */
  buildRun(host: RuntimeHost, input: RunLaunchInput): RuntimeLaunch | Promise<RuntimeLaunch>;
  /** Map a finished run's exit and output to the typed result (`costBasis` says how its cost was derived). Pure. */
  parseRun(spec: RunSpecView, exit: RunExit): RunResult;

  /**
   * Prepare an unattended interactive seat: its private home (seeded so no first-run, login or
   * trust screen stops it; MCP server and hooks configured) and its launch. May write files.
   */
  buildSeat(host: RuntimeHost, input: SeatLaunchInput): Promise<RuntimeLaunch>;
  /** What the seat's terminal shows. */
  classifyScreen(screen: string): ScreenState;
  /** A model-auth failure the screen shows, named (or undefined). */
  authFailureOnScreen(screen: string): string | undefined;
  /** The text typed into an idle seat holding mail, so its next turn's hook hands the mail over. */
  readonly wakePrompt: string;
  /** How long after typing text into its TUI to press Enter (a TUI that reads fast input as a paste takes a quick Enter as a newline). */
  readonly submitDelayMs?: number;
  /** How long its TUI may take to show its input screen before the start counts as failed (default 15 s; a TUI that loads a large bundle, e.g. OpenCode's, takes longer on a loaded host). */
  readonly screenTimeoutMs?: number;
  /**
   * How long after a wake the manager waits before typing another into a seat still idle with mail
   * (default 15 s). A TUI whose first prompt starts a session may still show its input screen while
   * that prompt's hooks run; a second wake typed then starts a second session (OpenCode).
   */
  readonly rewakeAfterMs?: number;

  /** Create the launch's private directory (0700, fresh) and write its files (0600), for a launch the kernel starts itself (a seat under tmux or a pty). */
  writeLaunchFiles(launch: Pick<RuntimeLaunch, "privateDir" | "files">): void;
  /**
   * `cotal setup --runtime <name>`: install Cotal's MCP server and hooks into the user's own
   * configuration, so a hand-started CLI joins the mesh (`check`: compare only). Absent: the
   * runtime installs another way (Claude: its plugin, connector/claude/).
   */
  setup?(o: { env: Env; connectorEntry: string; executable?: string | undefined; check: boolean }): Promise<RuntimeSetupReport>;
  /** Write the launch's private files and spawn it; the private directory goes when the process does. */
  spawn(launch: RuntimeLaunch, opts: SpawnOptions): LaunchedRuntime;
}
