// The Codex home a launch runs with (CODEX_HOME, docs/runtimes.md): a private 0700 directory per
// run or seat holding a copy of the user's own `config.toml` (their model, provider, base URL)
// and `auth.json` (their login), both 0600 and never in argv or logs, and Cotal's layer on top,
// `cotal.config.toml`, selected with `-p cotal` (Codex layers `$CODEX_HOME/<name>.config.toml` over
// the base config, so the user's file is used as it is, never merged or rewritten).
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Env, LaunchFile } from "../runtime/index.js";

/** The profile name of Cotal's layer (`-p cotal` reads `$CODEX_HOME/cotal.config.toml`). */
export const COTAL_PROFILE = "cotal";
const LAYER_FILE = `${COTAL_PROFILE}.config.toml`;
const CONFIG_FILE = "config.toml";
const AUTH_FILE = "auth.json";

/** The user's Codex home: `$CODEX_HOME`, else `~/.codex`. */
export function userCodexHome(env: Env): string {
  return env.CODEX_HOME ?? path.join(env.HOME ?? os.homedir(), ".codex");
}

/** What the user's Codex configuration names (names and paths only; never a value of a credential). */
export interface UserCodexConfig {
  home: string;
  /** The config file, when there is one. */
  config?: string;
  /** `model_provider` at the top of it. */
  provider?: string;
  /** `model` at the top of it. */
  model?: string;
  /** The environment variables its providers read their keys from (`env_key`): they pass into the launch. */
  envKeys: string[];
  /** The login file (`auth.json`), when there is one. */
  login?: string;
}

const topLevel = (toml: string): string => toml.split(/^\s*\[/m)[0] ?? "";
const stringKey = (toml: string, key: string): string | undefined => new RegExp(`^\\s*${key}\\s*=\\s*"([^"\\n]*)"`, "m").exec(toml)?.[1];

/** Read what the user's Codex home holds (a light read of the keys Cotal reports; Codex itself parses the file). */
export function readUserCodexConfig(env: Env): UserCodexConfig {
  const home = userCodexHome(env);
  const config = path.join(home, CONFIG_FILE);
  const login = path.join(home, AUTH_FILE);
  const out: UserCodexConfig = { home, envKeys: [] };
  if (existsSync(login)) out.login = login;
  if (!existsSync(config)) return out;
  const text = readFileSync(config, "utf8");
  const top = topLevel(text);
  const provider = stringKey(top, "model_provider");
  const model = stringKey(top, "model");
  out.config = config;
  if (provider) out.provider = provider;
  if (model) out.model = model;
  out.envKeys = [...new Set([...text.matchAll(/^\s*env_key\s*=\s*"([A-Za-z_][A-Za-z0-9_]*)"/gm)].map((m) => m[1]!))];
  return out;
}

/** A TOML basic string: JSON's escapes are TOML's (\n, \", \\, \uXXXX). */
export const tomlString = (s: string): string => JSON.stringify(s);

/** Cotal's layer, in TOML. */
export interface CotalLayer {
  /** The persona (Codex's `developer_instructions`: added to the model's instructions, never argv). */
  persona?: string | undefined;
  model?: string | undefined;
  approvalPolicy: string;
  sandboxMode: string;
  /** Cotal's MCP server (seats): the connector, started by Codex over stdio. */
  mcp?: { command: string; args: string[]; env: Record<string, string> } | undefined;
  /** Raw TOML tables appended after the keys (hooks). */
  tables?: string[];
}

export function renderLayer(l: CotalLayer): string {
  const lines = [
    "# Written by Cotal for one launch (docs/runtimes.md); the user's own config.toml lies under it.",
    `approval_policy = ${tomlString(l.approvalPolicy)}`,
    `sandbox_mode = ${tomlString(l.sandboxMode)}`,
  ];
  if (l.model !== undefined) lines.push(`model = ${tomlString(l.model)}`);
  if (l.persona !== undefined) lines.push(`developer_instructions = ${tomlString(l.persona)}`);
  if (l.mcp) lines.push("", renderMcpTable(l.mcp).trimEnd());
  for (const t of l.tables ?? []) lines.push("", t);
  return `${lines.join("\n")}\n`;
}

/** The header of Cotal's MCP server table. */
export const MCP_TABLE = "[mcp_servers.cotal]";

/** Cotal's MCP server table: the connector, started by Codex over stdio. */
export function renderMcpTable(mcp: { command: string; args: readonly string[]; env: Readonly<Record<string, string>> }): string {
  const lines = [
    MCP_TABLE,
    `command = ${tomlString(mcp.command)}`,
    `args = [${mcp.args.map(tomlString).join(", ")}]`,
    // Cotal's own tools run without an approval prompt, as Claude's mcp__cotal__* allow rule lets them:
    // with approval `never` Codex would otherwise refuse every call ("requires approval").
    'default_tools_approval_mode = "approve"',
  ];
  const env = Object.entries(mcp.env);
  if (env.length) lines.push(`env = { ${env.map(([k, v]) => `${k} = ${tomlString(v)}`).join(", ")} }`);
  return `${lines.join("\n")}\n`;
}

/** `text` with the TOML table `header` (up to the next table) replaced by `table`, or `table` appended. */
export function upsertTable(text: string, header: string, table: string): string {
  const at = text.indexOf(`${header}\n`);
  if (at < 0 || (at > 0 && text[at - 1] !== "\n")) return `${text}${text === "" || text.endsWith("\n") ? "" : "\n"}\n${table}`;
  const rest = text.slice(at + header.length);
  const next = rest.search(/\n\[/);
  return `${text.slice(0, at)}${table.trimEnd()}\n${next < 0 ? "" : rest.slice(next)}`;
}

/** The files of a private Codex home: the user's config and login copied (0600), and Cotal's layer. */
export function homeFiles(dir: string, user: UserCodexConfig, layer: CotalLayer): LaunchFile[] {
  const files: LaunchFile[] = [{ path: path.join(dir, LAYER_FILE), mode: 0o600, content: renderLayer(layer) }];
  if (user.config) files.push({ path: path.join(dir, CONFIG_FILE), mode: 0o600, content: readFileSync(user.config, "utf8") });
  if (user.login) files.push({ path: path.join(dir, AUTH_FILE), mode: 0o600, content: readFileSync(user.login, "utf8") });
  return files;
}
