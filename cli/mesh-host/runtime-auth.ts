// The way each runtime authenticates, as a person chooses it for a manager's seats and runs: one
// `--<runtime>-auth <mode>` flag (or COTAL_<RUNTIME>_AUTH) per runtime whose adapter offers a
// choice (`authModes`; Claude's modes, docs/claude-binding.md). `auto` is what the manager's
// environment selects, as the CLI in that shell would.
import { Option, type Command } from "commander";
import type { RuntimeAdapter } from "../../runtime/index.js";
import { RUNTIMES, runtimeNamed } from "../../runtimes/index.js";
import type { RuntimeConfigStatus } from "../../schemas/index.js";
import { UsageError } from "../terminal/errors.js";

/** Per runtime name, the mode chosen for it (only runtimes with a choice). */
export type AuthChoices = Readonly<Record<string, string>>;

const choosable = (): RuntimeAdapter[] => RUNTIMES.filter((r) => r.authModes?.length);
const flagOf = (a: RuntimeAdapter) => `--${a.name}-auth`;
const envOf = (a: RuntimeAdapter) => `COTAL_${a.name.toUpperCase().replace(/-/g, "_")}_AUTH`;
/** How commander names the flag's value. */
const keyOf = (a: RuntimeAdapter) => `${a.name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())}Auth`;

/** Add `--<runtime>-auth <mode>` for every runtime with a choice (its COTAL_<RUNTIME>_AUTH as the default). */
export function addAuthOptions(cmd: Command, whose: string): Command {
  for (const a of choosable())
    cmd.addOption(
      new Option(
        `${flagOf(a)} <mode>`,
        `how ${whose} ${a.label} seats and runs authenticate: auto (default: as \`${a.command}\` in this shell would), ${a.authModes!.filter((m) => m !== "auto").join(", ")}`,
      ).env(envOf(a)),
    );
  return cmd;
}

/** The choices given as flags (parsed by commander) or in the environment, each checked against its runtime's modes. */
export function authChoices(flags: Readonly<Record<string, unknown>>, env: NodeJS.ProcessEnv = process.env): AuthChoices {
  const out: Record<string, string> = {};
  for (const a of choosable()) {
    const given = flags[keyOf(a)] ?? env[envOf(a)] ?? "auto";
    if (typeof given !== "string" || !a.authModes!.includes(given))
      throw new UsageError(`${flagOf(a)} (or ${envOf(a)}) is ${JSON.stringify(given)}: it must be ${a.authModes!.join(", ")}.`, {
        remedy: `Pass ${flagOf(a)} auto, or one of the modes docs/runtimes.md lists for ${a.label}.`,
      });
    out[a.name] = given;
  }
  return out;
}

/** The flags that hand the choices on to a manager started in the background. */
export function authArgs(choices: AuthChoices): string[] {
  return Object.entries(choices).flatMap(([name, mode]) => [`--${name}-auth`, mode]);
}

type AuthEntry = Pick<RuntimeConfigStatus, "name" | "ready" | "auth" | "problem" | "remedy">;

/**
 * A runtime's auth for people: the mode, how it was chosen, the variables it reads (names only) and
 * the endpoint or login (only a login found: a missing one is named in the problem); when its
 * credentials are missing, that and the fix. Undefined for a runtime without a choice of auth.
 */
export function describeRuntimeAuth(r: AuthEntry): string | undefined {
  const a = r.auth;
  if (!a) return undefined;
  const from = [
    a.vars.length ? a.vars.join(", ") : undefined,
    a.baseUrl ? `base URL ${a.baseUrl}` : undefined,
    a.login && r.ready ? `login ${a.login}` : undefined,
  ]
    .filter(Boolean)
    .join("; ");
  const head = `${a.mode} (${a.chosen === "auto" ? "detected" : "chosen"}${from ? `: ${from}` : ""})`;
  return r.ready ? head : `${head}, NOT READY: ${r.problem ?? "credentials missing"} ${r.remedy ?? ""}`.trimEnd();
}

/** `<Label> auth:  …` lines for the runtimes of a manager's status that have a choice of auth (`who`: the manager, when several are listed). */
export function authLines(runtimes: readonly AuthEntry[] | undefined, who = ""): string[] {
  return (runtimes ?? []).flatMap((r) => {
    const said = describeRuntimeAuth(r);
    const label = `${runtimeNamed(r.name)?.label ?? r.name} auth:`;
    return said ? [`${label.padEnd(13)} ${who}${said}`] : [];
  });
}
