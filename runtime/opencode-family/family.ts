// The OpenCode family (docs/runtimes.md): OpenCode and the CLIs forked from it (Kilo Code) read the
// same config dialect (providers, `mcp`, `permission`, agents, plugins), load the same plugin API
// and print the same `run --format json` events. What tells one member from another is names:
// its folders and files, its variables, its plugin SDK, the asks its defaults add, whether it
// writes into the config files it reads. An adapter of the family describes its CLI with one of
// these; the launch, posture, setup, plugin and result parser of this folder do the rest.

/** The provider key variables every member reads for its built-in providers (the common ones); a member adds its own gateway's. */
export const COMMON_PROVIDER_KEY_VARS = [
  "ANTHROPIC_API_KEY",
  "OPENAI_API_KEY",
  "GOOGLE_GENERATIVE_AI_API_KEY",
  "GEMINI_API_KEY",
  "OPENROUTER_API_KEY",
  "GROQ_API_KEY",
  "MISTRAL_API_KEY",
  "DEEPSEEK_API_KEY",
  "XAI_API_KEY",
] as const;

export interface OpencodeFamily {
  /** The runtime's name (`opencode`): remedies, and COTAL_RUNTIME for a hand-started session's connector. */
  runtime: string;
  /** The product, for sentences (`OpenCode`). */
  label: string;
  /** Its executable (`opencode`), for remedies that name its commands. */
  command: string;
  /** Its folder under the XDG config and data homes (`opencode`: `~/.config/opencode`, `~/.local/share/opencode`). */
  app: string;
  /** The config files of its global folder that a launch carries, in the order it reads them (a later one wins). */
  configFiles: readonly string[];
  /** The config file it edits itself (and `cotal setup` with it): the first of these that exists, else the first plain `.json`. */
  editedFiles: readonly string[];
  /** Its variables: a config file of the user's own, a config folder read after the project's, its auto-update switch. */
  env: { config: string; configDir: string; disableAutoupdate: string };
  /** The `$schema` its config files name. */
  schema: string;
  /** Its plugin SDK: the version the pinned CLI installs into every config folder naming a plugin. */
  pluginSdk: { name: string; version: string };
  /** Cotal's plugin bundle for it, beside the connector's entry in the plugin's bin/. */
  pluginBundle: string;
  /** Its own switches a user may have set for every launch (no model fetch offline, …): passed through, carried to a background manager. */
  switches: readonly string[];
  /** The provider key variables it reads for its built-in providers (the common ones). */
  providerKeyVars: readonly string[];
  /** Permissions its defaults ask a person about beyond the family's own: refused unattended. */
  moreAsks: readonly string[];
  /**
   * How the user's config files reach a launch: named where they are (`in-place`), or copied into
   * the private home (`copied`: a CLI that writes into the config files it reads, which a managed
   * launch must never change).
   */
  userConfig: "in-place" | "copied";
  /** Top-level keys of Cotal's layer for this CLI alone (Kilo: `snapshot: false`). */
  layer: Readonly<Record<string, unknown>>;
  /** Empty files its private global config folder is seeded with (Kilo: the mark of a migration it would run on the user's copies). */
  seeds: readonly string[];
  /** Its typed launch error. */
  fail(message: string, o?: { remedy?: string; cause?: unknown }): Error;
}
