// Codex runs a non-managed command hook only once it is trusted (an untrusted one is skipped
// without a word). The trust is what Codex's own `/hooks` review writes:
// `[hooks.state."<key>"] trusted_hash = "<hash>"` in the home's config.toml, where key and hash
// are what `codex app-server` lists for each hook (`hooks/list`). Cotal wrote these
// hooks itself, into a home only this seat uses, so it trusts exactly them, by that recipe,
// rather than run with `--dangerously-bypass-hook-trust` (which would run any other hook too). A
// seat's hooks and a run's (the deny floor, launch.ts) are trusted alike. Verified on 0.171.0.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { codexLaunchError } from "./errors.js";
import { tomlString, upsertTable } from "./home.js";

/** What every Cotal hook command contains (the connector's hook bundle): how Cotal tells its hooks from the user's. */
export const COTAL_HOOK_MARK = "hook.mjs";

export interface ListedHook {
  key?: string;
  command?: string;
  currentHash?: string;
  trustStatus?: string;
  sourcePath?: string;
}

/** What `codex app-server` lists for a home: its hooks, and the errors it met reading them (an invalid config.toml lists none). */
export interface HookListing {
  hooks: ListedHook[];
  errors: string[];
}

/** How long a listing app-server gets to exit once asked (SIGTERM, stdin closed) before SIGKILL. */
const EXIT_GRACE_MS = 5_000;

type ListResult = { data?: Array<{ hooks?: ListedHook[]; errors?: Array<{ message?: string }> }> };

/**
 * Run `use` with a `codex app-server` for the home at `env.CODEX_HOME` (initialize, initialized),
 * whose `list()` asks `hooks/list`: Codex reads the home's config.toml afresh for each, so one
 * app-server can list, see a trust written, and list again. Resolves only once the app-server has
 * exited: it writes its own state into the home, which the caller may remove or hand to the CLI
 * next. (SIGKILL on the npm package's `codex` shim would orphan the native app-server; SIGTERM
 * reaches it through the shim.)
 */
async function withAppServer<T>(
  codex: string,
  env: Record<string, string>,
  cwd: string,
  use: (list: () => Promise<HookListing>) => Promise<T>,
  timeoutMs = 20_000,
): Promise<T> {
  const child = spawn(codex, ["app-server"], { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  let exitError: Error | undefined;
  const pending = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void }>();
  const exited = new Promise<void>((resolve) => {
    const gone = (err: Error): void => {
      exitError ??= err;
      for (const p of pending.values()) p.reject(exitError);
      pending.clear();
      resolve();
    };
    child.once("error", (cause) => gone(codexLaunchError(`codex app-server could not be started: ${cause.message}`, { cause })));
    child.once("close", () => gone(codexLaunchError(`codex app-server exited before listing hooks${stderr ? `: ${stderr.slice(-300)}` : ""}.`)));
  });
  child.stdin.on("error", () => undefined);
  child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr = (stderr + s).slice(-2_000)));
  const send = (o: object): void => void child.stdin.write(`${JSON.stringify(o)}\n`);
  let nextId = 1;
  const request = (method: string, params: object): Promise<unknown> => {
    if (exitError) return Promise.reject(exitError);
    const id = nextId++;
    return new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(codexLaunchError(`codex app-server did not answer ${method} within ${timeoutMs / 1000} s${stderr ? `: ${stderr.slice(-300)}` : ""}.`));
      }, timeoutMs);
      const done = (f: () => void): void => {
        clearTimeout(timer);
        pending.delete(id);
        f();
      };
      pending.set(id, { resolve: (r) => done(() => resolve(r)), reject: (e) => done(() => reject(e)) });
      send({ jsonrpc: "2.0", id, method, params });
    });
  };
  let buf = "";
  child.stdout.setEncoding("utf8").on("data", (s: string) => {
    buf += s;
    for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      let msg: { id?: number; result?: unknown; error?: { message?: string } };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        continue;
      }
      const p = msg.id === undefined ? undefined : pending.get(msg.id);
      if (!p) continue;
      if (msg.error) p.reject(codexLaunchError(`codex app-server refused a request: ${msg.error.message ?? "no reason"}`));
      else p.resolve(msg.result);
    }
  });
  try {
    await request("initialize", { clientInfo: { name: "cotal", version: "1" } });
    send({ jsonrpc: "2.0", method: "initialized", params: {} });
    return await use(async () => {
      const data = ((await request("hooks/list", { cwds: [cwd] })) as ListResult | undefined)?.data ?? [];
      return {
        hooks: data.flatMap((d) => d.hooks ?? []),
        errors: data.flatMap((d) => (d.errors ?? []).flatMap((e) => (e.message ? [e.message] : []))),
      };
    });
  } finally {
    child.stdin.end();
    child.kill("SIGTERM");
    const kill = setTimeout(() => child.kill("SIGKILL"), EXIT_GRACE_MS);
    await exited;
    clearTimeout(kill);
  }
}

/** Ask `codex app-server` which hooks the home at `env.CODEX_HOME` declares. */
export function listHooks(codex: string, env: Record<string, string>, cwd: string): Promise<HookListing> {
  return withAppServer(codex, env, cwd, (list) => list());
}

/**
 * Trust Cotal's hooks in `hooksFile` of the home at `env.CODEX_HOME`: list them, write their trust
 * into its config.toml (other tables kept), and list again to prove Codex now reads them as
 * trusted (one app-server for all three). Returns how many.
 */
export async function trustSeatHooks(codex: string, env: Record<string, string>, cwd: string, hooksFile: string, expected: number): Promise<number> {
  const ours = (hooks: ListedHook[]): ListedHook[] =>
    hooks.filter((h) => typeof h.key === "string" && h.key.startsWith(`${hooksFile}:`) && (h.command === undefined || h.command.includes(COTAL_HOOK_MARK)));
  return withAppServer(codex, env, cwd, async (list) => {
    const listing = await list();
    const listed = ours(listing.hooks);
    if (listed.length !== expected)
      throw codexLaunchError(
        `codex lists ${listed.length} of Cotal's ${expected} hooks in ${hooksFile}; mail would not be handed over, nor the deny floor held` +
          (listing.errors.length ? `. Codex says: ${listing.errors.join("; ").slice(0, 500)}` : "."),
        { remedy: "Fix what Codex names in your own ~/.codex/config.toml (a seat's and a run's home start from a copy of it)." },
      );
    if (listed.some((h) => h.trustStatus !== "trusted" && h.trustStatus !== "managed")) {
      const config = path.join(env.CODEX_HOME!, "config.toml");
      let text = existsSync(config) ? readFileSync(config, "utf8") : "";
      for (const h of listed)
        text = upsertTable(
          text,
          `[hooks.state.${tomlString(h.key!)}]`,
          `[hooks.state.${tomlString(h.key!)}]\ntrusted_hash = ${tomlString(h.currentHash ?? "")}\n`,
        );
      writeFileSync(config, text, { mode: 0o600 });
    }
    const after = ours((await list()).hooks);
    const untrusted = after.filter((h) => h.trustStatus !== "trusted");
    if (untrusted.length) throw codexLaunchError(`codex still reads ${untrusted.length} of Cotal's hooks as untrusted after Cotal trusted them.`);
    return after.length;
  });
}
