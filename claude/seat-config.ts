// A seat-private Claude config dir (CLAUDE_CONFIG_DIR), pre-seeded so an interactive seat starts
// straight at its input screen with nobody there: no first-run, theme, API-key or trust screen
// (docs/manager.md "A Claude seat starts unattended"; CLAUDE_CONFIG_DIR holds `.claude.json`
// and `settings.json` itself, verified on 2.1.332).
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { loginFile } from "./auth.js";

export interface SeatConfigInput {
  /** The seat's config dir (created 0700; removed with the seat). */
  dir: string;
  /** The seat's working directory: its trust dialog is answered here. */
  cwd: string;
  /** An API key the seat will use: Claude asks once whether to use it, answered "yes" here. */
  apiKey?: string | undefined;
  /** The launcher's environment, to find the user's Claude login to copy (subscription auth). */
  parentEnv?: Readonly<Record<string, string | undefined>>;
  /** The seat runs bypassPermissions because its agent file asked for it by name: its warning is answered. */
  bypassAccepted?: boolean;
}

/** The file names inside a Claude config dir. */
const GLOBAL_CONFIG = ".claude.json";
const SETTINGS = "settings.json";
const CREDENTIALS = ".credentials.json";

/**
 * Write the seat's Claude config dir. The user's own Claude login (`.credentials.json` of their
 * config dir) is copied in, 0600, so a subscription seat is signed in; nothing else of theirs is.
 * Returns the directory, for CLAUDE_CONFIG_DIR.
 */
export function seedSeatConfig(input: SeatConfigInput): string {
  mkdirSync(input.dir, { recursive: true, mode: 0o700 });
  const config = {
    hasCompletedOnboarding: true,
    theme: "dark",
    ...(input.apiKey ? { customApiKeyResponses: { approved: [input.apiKey.slice(-20)], rejected: [] } } : {}),
    projects: { [input.cwd]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
    ...(input.bypassAccepted ? { bypassPermissionsModeAccepted: true } : {}),
  };
  writeFileSync(path.join(input.dir, GLOBAL_CONFIG), `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  const settings = input.bypassAccepted ? { skipDangerousModePermissionPrompt: true } : {};
  writeFileSync(path.join(input.dir, SETTINGS), `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
  const login = loginFile(input.parentEnv ?? process.env);
  if (path.resolve(path.dirname(login)) !== path.resolve(input.dir) && existsSync(login)) {
    copyFileSync(login, path.join(input.dir, CREDENTIALS));
  }
  return input.dir;
}

/** A screen that stops an unattended seat, by what it says. */
export interface BlockingScreen {
  name: string;
  pattern: RegExp;
}

/**
 * Screens the interactive CLI can stop on before its input screen (2.1.332): a seat that shows one
 * is failed with its name, never left waiting for someone to press a key.
 */
export const BLOCKING_SCREENS: readonly BlockingScreen[] = [
  { name: "the first-run connectivity check (Unable to connect to Anthropic services)", pattern: /Unable to connect to Anthropic services/ },
  { name: "the first-run welcome", pattern: /Welcome to Claude Code/ },
  { name: "the theme picker (first run)", pattern: /Choose the text style|Let's get started/i },
  { name: "the login method question", pattern: /Select login method|Log in with your Claude account/i },
  { name: "the API-key question", pattern: /Do you want to use this API key/i },
  { name: "the trust dialog", pattern: /Do you trust the files in this folder|Is this a project you created or one you trust/i },
  { name: "the Bypass Permissions warning", pattern: /Bypass Permissions mode/i },
  { name: "a permission prompt", pattern: /Do you want to proceed\?/ },
];

/**
 * What an interactive session shows while its model calls are refused for their credentials
 * (2.1.332 retries a 401 ten times with backoff, `401 invalid x-api-key · retrying in 18s ·
 * attempt 6/10`, before its StopFailure hook fires): the line, or undefined.
 */
const AUTH_FAILURE =
  /\b401\b.*(invalid|unauthori[sz]ed|authentication)|invalid api key|not logged in|please run \/login|oauth token (has )?expired|authentication_error/i;
export function authFailureOnScreen(screen: string): string | undefined {
  return screen
    .split("\n")
    .find((l) => AUTH_FAILURE.test(l))
    ?.replace(/^[^A-Za-z0-9]+/, "")
    .trim()
    .slice(0, 200);
}

/**
 * The input screen of an idle interactive session (its footer): `(shift+tab to cycle)` in the
 * modes seats run in by default, `manual mode on` in Claude's default mode (a supervised seat).
 */
export const INPUT_SCREEN = /\(shift\+tab to cycle\)|manual mode on/;

/** What a screen is: ready for input, stopped on a named screen, or neither yet. */
export function classifyScreen(screen: string): { kind: "ready" } | { kind: "blocked"; name: string } | { kind: "unknown" } {
  const blocked = BLOCKING_SCREENS.find((b) => b.pattern.test(screen));
  if (blocked) return { kind: "blocked", name: blocked.name };
  if (INPUT_SCREEN.test(screen)) return { kind: "ready" };
  return { kind: "unknown" };
}
