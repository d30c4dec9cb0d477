// `cotal completion bash|zsh|fish` through the built CLI, loaded into the real shells: commands
// and flags as the command's own --help lists them, values by kind, and seat, channel and manager
// names from a running mesh. Bash is driven as its completion system drives it (COMP_WORDS,
// COMP_CWORD, then the completion function); fish by its own `complete -C`; zsh with its
// completion builtins (compadd, _files) stood in by functions that print what they are given.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, cliFolder, cotalBundle, freePort, runCotal, type CliResult } from "../../harness/cli.js";

const { dir: project, cotal } = cliFolder("cotal-completion-");
const scratch = mkdtempSync(join(tmpdir(), "cotal-completion-tools-"));
const bin = join(scratch, "bin");
/** The scripts call `cotal` from PATH, as they do for a user. */
const env = cleanEnv({ PATH: [bin, process.env.PATH ?? ""].join(delimiter) });
const scripts: Record<"bash" | "zsh" | "fish", string> = { bash: "", zsh: "", fish: "" };

const has = (shell: string) => spawnSync(shell, ["-c", "exit 0"]).status === 0;

function ok(r: CliResult, what: string): CliResult {
  expect(r.code, `${what}: ${r.stderr}`).toBe(0);
  return r;
}

/** What bash's completion offers for `words` (the last one is being completed), run in `cwd`. */
function bash(cwd: string, ...words: string[]): string[] {
  const line = words.map((w) => `'${w}'`).join(" ");
  const r = spawnSync(
    "bash",
    ["-c", `source '${scripts.bash}'\nCOMP_WORDS=(${line}); COMP_CWORD=${words.length - 1}; COMPREPLY=(); _cotal\nprintf '%s\\n' "\${COMPREPLY[@]}"`],
    {
      cwd,
      env,
      encoding: "utf8",
      timeout: 30_000,
    },
  );
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.split("\n").filter(Boolean);
}

/** What fish's `complete -C` offers for this command line. */
function fish(cwd: string, line: string): string[] {
  const r = spawnSync("fish", ["--no-config", "-c", `source '${scripts.fish}'; complete -C '${line}'`], { cwd, env, encoding: "utf8", timeout: 30_000 });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout
    .split("\n")
    .filter(Boolean)
    .map((l) => l.split("\t")[0]!);
}

/** What zsh's completion function hands compadd (and _files) for `words`. */
function zsh(cwd: string, ...words: string[]): string[] {
  const stubs = [
    "compdef() { :; }",
    'compadd() { while (( $# )); do case $1 in -a) shift; print -l -- ${(P)1}; shift;; --) shift; print -l -- "$@"; break;; -*) shift;; *) print -l -- "$@"; break;; esac; done; }',
    '_files() { print -- "<files $*>"; }',
  ].join("\n");
  const line = words.map((w) => `'${w}'`).join(" ");
  const r = spawnSync("zsh", ["-f", "-c", `${stubs}\nsource '${scripts.zsh}'\nwords=(${line}); CURRENT=${words.length}; _cotal`], {
    cwd,
    env,
    encoding: "utf8",
    timeout: 30_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.split("\n").filter(Boolean);
}

/** The commands (or flags) a `--help` lists. */
async function helpList(path: string[], block: "Commands" | "Options"): Promise<string[]> {
  const text = ok(await runCotal([...path, "--help"], { cwd: project, env: cleanEnv({ COLUMNS: "200" }) }), `${path.join(" ")} --help`).stdout;
  const lines = text.split("\n");
  const start = lines.indexOf(`${block}:`);
  const out: string[] = [];
  for (const l of lines.slice(start + 1)) {
    if (l.trim() === "" || !l.startsWith(" ")) break;
    if (block === "Commands") {
      const m = /^\s{2}([a-z][a-z0-9-]*)/.exec(l);
      if (m && m[1] !== "help") out.push(m[1]!);
    } else out.push(...(l.match(/^\s{2}((?:-\w, )?--[a-z][a-z0-9-]*)/)?.[1]?.split(", ") ?? []));
  }
  return out;
}

let manager = "";

beforeAll(async () => {
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, "cotal"), `#!/bin/sh\nexec '${process.execPath}' '${cotalBundle}' "$@"\n`, { mode: 0o755 });
  for (const shell of ["bash", "zsh", "fish"] as const) {
    const r = ok(await runCotal(["completion", shell], { cwd: scratch, env }), `completion ${shell}`);
    scripts[shell] = join(scratch, `cotal.${shell}`);
    writeFileSync(scripts[shell], r.stdout);
  }
  ok(await cotal("up", "-d", "--port", String(await freePort())), "up -d");
  ok(await cotal("channels", "set", "ops", "--class", "live"), "channels set ops");
  // A channel with stored posts, no configuration of its own and no member: `channels list` lists it.
  ok(await cotal("send", "msg", "lobby", "posted before anyone joined", "--as", "alice", "--impersonate"), "send msg lobby");
  ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "parrot", "--channel", "general"), "spawn parrot");
  const status = ok(await cotal("status", "--json"), "status").json<{ managers?: Array<{ instance: string }> }>();
  manager = status.managers?.[0]?.instance ?? "";
  expect(manager).not.toBe("");
}, 180_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("cotal completion bash", () => {
  it("completes every command --help lists, and each command's flags as its --help lists them", async () => {
    expect(bash(scratch, "cotal", "").sort()).toEqual((await helpList([], "Commands")).sort());
    expect(bash(scratch, "cotal", "st")).toEqual(["status", "stop"]);
    expect(bash(scratch, "cotal", "send", "")).toEqual(await helpList(["send"], "Commands"));
    for (const path of [["send", "msg"], ["channels", "set"], ["doctor"], ["up"]]) {
      const offered = bash(scratch, "cotal", ...path, "-");
      for (const flag of await helpList(path, "Options")) expect(offered, `${path.join(" ")} ${flag}`).toContain(flag);
    }
    expect(bash(scratch, "cotal", "channels", "set", "--cl")).toEqual(["--class"]);
    // The hidden name source is no command to offer.
    expect(bash(scratch, "cotal", "__")).toEqual([]);
  });

  it("completes values by kind: fixed choices, folders for a folder flag, nothing for free text", () => {
    expect(bash(scratch, "cotal", "completion", "")).toEqual(["bash", "zsh", "fish"]);
    mkdirSync(join(scratch, "store-here"), { recursive: true });
    expect(bash(scratch, "cotal", "up", "--store-dir", "store-")).toEqual(["store-here"]);
    expect(bash(scratch, "cotal", "history", "general", "--limit", "")).toEqual([]);
  });

  it("completes seat, channel and manager names from the running mesh", () => {
    expect(bash(project, "cotal", "send", "dm", "")).toContain("parrot");
    expect(bash(project, "cotal", "stop", "--name", "pa")).toEqual(["parrot"]);
    const channels = bash(project, "cotal", "history", "");
    expect(channels).toEqual(expect.arrayContaining(["general", "ops"]));
    expect(bash(project, "cotal", "send", "msg", "o")).toEqual(["ops"]);
    // What `cotal channels list` lists, a channel known only by its posts included.
    expect(bash(project, "cotal", "history", "l")).toEqual(["lobby"]);
    expect(bash(project, "cotal", "ps", "--on", "")).toEqual([manager]);
    // Flags still complete after a name.
    expect(bash(project, "cotal", "send", "dm", "parrot", "hi", "--j")).toEqual(["--json"]);
  });

  it("without a mesh, names complete to nothing: __complete prints nothing, says nothing and exits 0", async () => {
    expect(bash(scratch, "cotal", "history", "")).toEqual([]);
    const r = await runCotal(["__complete", "seats"], { cwd: scratch, env });
    expect(r).toMatchObject({ code: 0, stdout: "", stderr: "" });
    // Unreachable server named on the line: the same.
    const far = await runCotal(["__complete", "channels", "--server", `nats://127.0.0.1:${await freePort()}`, "--space", "default"], { cwd: scratch, env });
    expect(far).toMatchObject({ code: 0, stdout: "", stderr: "" });
  });
});

for (const sh of ["fish", "zsh"])
  if (!has(sh))
    console.warn(`test/cli/completion/completion.e2e.test.ts: ${sh} is not installed, its completion tests skip (apt-get install ${sh}; .ci/run does)`);

describe.skipIf(!has("fish"))("cotal completion fish", () => {
  it("fish's own completion offers commands, subcommands, choices and names from the mesh", async () => {
    expect(fish(scratch, "cotal ").sort()).toEqual((await helpList([], "Commands")).sort());
    expect(fish(scratch, "cotal send ").sort()).toEqual(["ask", "dm", "msg"]);
    expect(fish(scratch, "cotal completion ").sort()).toEqual(["bash", "fish", "zsh"]);
    expect(fish(scratch, "cotal channels set --cl")).toContain("--class");
    expect(fish(project, "cotal send dm ")).toContain("parrot");
    expect(fish(project, "cotal ps --on ")).toEqual([manager]);
  });
});

describe.skipIf(!has("zsh"))("cotal completion zsh", () => {
  it("hands zsh's compadd the commands, subcommands, flags, folder completion and names from the mesh", async () => {
    expect(zsh(scratch, "cotal", "").sort()).toEqual((await helpList([], "Commands")).sort());
    expect(zsh(scratch, "cotal", "send", "")).toEqual(["msg", "dm", "ask"]);
    expect(zsh(scratch, "cotal", "doctor", "-")).toEqual(expect.arrayContaining(await helpList(["doctor"], "Options")));
    expect(zsh(scratch, "cotal", "up", "--store-dir", "")).toEqual(["<files -/>"]);
    expect(zsh(project, "cotal", "history", "")).toEqual(expect.arrayContaining(["general", "ops"]));
    expect(zsh(project, "cotal", "ps", "--on", "")).toEqual([manager]);
  });
});
