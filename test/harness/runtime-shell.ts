// One user's shell with each agent CLI configured as its own docs say, against the doubles: the
// Claude double's URL and key, a ~/.codex/config.toml naming the Responses double, a
// ~/.config/opencode/opencode.json naming the Messages double, a ~/.gemini/settings.json with
// API-key auth and the Gemini double's URL, a ~/.pi/agent/models.json naming the Messages double,
// and a provider of the user's own for GitHub Copilot CLI (COPILOT_PROVIDER_*: the Messages
// double). Tests that seat every runtime through the shipped CLI start their mesh from this shell.
import { mkdirSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findNatsServer } from "../../broker/index.js";
import type { GeminiDouble } from "../../testbed/gemini-double.js";
import { codexProviderConfig, type ResponsesDouble } from "../../testbed/responses-double.js";
import { claudeEnv } from "./claude-runner.js";
import type { ModelDouble } from "../../testbed/model-double.js";

/** The doubles the runtimes talk to: Claude Code, OpenCode, pi and Copilot speak Anthropic Messages, Codex the Responses API, Gemini CLI Gemini's. */
export interface RuntimeDoubles {
  messages: ModelDouble;
  responses: ResponsesDouble;
  gemini: GeminiDouble;
  /** pi's and Copilot's own Messages doubles (a double plays its script in order: seats that may turn at once get one each); default `messages`. */
  pi?: ModelDouble;
  copilot?: ModelDouble;
}

const KEY_VAR = "DOUBLE_PROVIDER_KEY";
const PI_KEY_VAR = "DOUBLE_PI_KEY";

/** Write the user's own configuration of each CLI under `<project>/home` and return the shell that holds it, in a space of its own. */
export function runtimeShell(project: string, d: RuntimeDoubles, space: string): NodeJS.ProcessEnv {
  const home = join(project, "home");
  mkdirSync(join(home, ".codex"), { recursive: true });
  writeFileSync(join(home, ".codex", "config.toml"), codexProviderConfig(d.responses.baseUrl, KEY_VAR));
  writeOpencodeConfig(home, d.messages.url);
  writeGeminiSettings(home);
  writePiConfig(home, (d.pi ?? d.messages).url, PI_KEY_VAR);
  // A space of its own: a connector's custody is per host and principal, and other meshes on this host may seat these names too.
  return {
    ...claudeEnv({ baseUrl: d.messages.url, home }),
    NATS_SERVER_BIN: findNatsServer(),
    [KEY_VAR]: "sk-codex-double",
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    GEMINI_API_KEY: "gemini-double-key",
    GOOGLE_GEMINI_BASE_URL: d.gemini.baseUrl,
    [PI_KEY_VAR]: "sk-pi-double",
    ...copilotShell((d.copilot ?? d.messages).url, "sk-copilot-double-0123456789"),
    COTAL_SPACE: space,
  };
}

/**
 * The user's own ~/.config/opencode/opencode.json under `home`: the Messages double at `messagesUrl`
 * as its Anthropic provider with `apiKey` (a key, or `{env:VAR}` to read one from their shell), and
 * `extra` keys of their config.
 */
export function writeOpencodeConfig(home: string, messagesUrl: string, extra: Record<string, unknown> = {}, apiKey = "sk-opencode-double"): void {
  mkdirSync(join(home, ".config", "opencode"), { recursive: true });
  writeFileSync(
    join(home, ".config", "opencode", "opencode.json"),
    JSON.stringify({
      model: "anthropic/claude-double",
      provider: {
        anthropic: { options: { baseURL: `${messagesUrl}/v1`, apiKey }, models: { "claude-double": { name: "Claude double" } } },
      },
      ...extra,
    }),
  );
}

/** The user's own ~/.gemini/settings.json under `home`: API-key auth (the key and the double's URL are variables of their shell). */
export function writeGeminiSettings(home: string): void {
  mkdirSync(join(home, ".gemini"), { recursive: true });
  writeFileSync(join(home, ".gemini", "settings.json"), JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } } }));
}

/**
 * The user's own Kilo Code configuration under `home` (~/.config/kilo/kilo.json, as Kilo's docs
 * say): the Messages double at `messagesUrl` as its Anthropic provider, the key read from the
 * variable `keyVar` (`{env:…}`), and `extra` keys of their config. No `$schema`: Kilo writes one
 * into a config file it reads that lacks it, so a file left as written proves Kilo never read it
 * in place.
 */
export function writeKiloConfig(home: string, messagesUrl: string, keyVar: string, extra: Record<string, unknown> = {}): string {
  const file = join(home, ".config", "kilo", "kilo.json");
  mkdirSync(join(home, ".config", "kilo"), { recursive: true });
  writeFileSync(
    file,
    JSON.stringify({
      model: "anthropic/claude-double",
      provider: {
        anthropic: { options: { baseURL: `${messagesUrl}/v1`, apiKey: `{env:${keyVar}}` }, models: { "claude-double": { name: "Claude double" } } },
      },
      ...extra,
    }),
  );
  return file;
}

/**
 * The user's own pi configuration under `home` (~/.pi/agent): models.json naming the Messages double
 * at `messagesUrl` as a custom provider whose key pi reads from the variable `keyVar`, and
 * settings.json choosing it as the default provider and model.
 */
export function writePiConfig(home: string, messagesUrl: string, keyVar: string): void {
  const dir = join(home, ".pi", "agent");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "models.json"),
    JSON.stringify({ providers: { double: { baseUrl: messagesUrl, api: "anthropic-messages", apiKey: keyVar, models: [{ id: "claude-double" }] } } }),
  );
  writeFileSync(join(dir, "settings.json"), JSON.stringify({ defaultProvider: "double", defaultModel: "claude-double" }));
}

/**
 * The user's own shell for GitHub Copilot CLI with a provider of their own (bring your own key): the
 * Messages double at `messagesUrl` as an Anthropic provider, its key and model, offline (no GitHub
 * login), and a cache for the unpacked CLI shared by the tests (its first start unpacks ≈ 235 MB).
 */
export function copilotShell(messagesUrl: string, key: string): Record<string, string> {
  return {
    COPILOT_PROVIDER_TYPE: "anthropic",
    COPILOT_PROVIDER_BASE_URL: messagesUrl,
    COPILOT_PROVIDER_API_KEY: key,
    COPILOT_MODEL: "claude-double",
    COPILOT_OFFLINE: "true",
    XDG_CACHE_HOME: join(tmpdir(), "cotal-copilot-cache"),
  };
}

/** Take a mesh of every runtime down: `cotal down` (run by `down`), the doubles closed, the project folder removed. */
export async function closeRuntimes(project: string | undefined, down: () => Promise<unknown>, d: Partial<RuntimeDoubles>): Promise<void> {
  if (project) await down().catch(() => undefined);
  await d.messages?.close();
  await d.responses?.close();
  await d.gemini?.close();
  await d.pi?.close();
  await d.copilot?.close();
  if (project) await rm(project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
}
