// Architectural rules as tests: dependencies point one way (cli → manager, manager → runtimes →
// adapters → runtime, broker → schemas), and a component reaches another only through its one public entry
// (index.ts), from its top folder and from every sub-folder alike: a sub-folder's own index
// (e.g. connector/claude/) is no door for other components. Tests may also use a component's
// internal entry (internal.ts, the nats.js internal_mod.ts); the benches, which ship as
// dist/bench*.mjs, use the entries and the shared testbed/ but never test code.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/**
 * The adapter folders, read from what the registry (runtimes/index.ts) imports: a new runtime's
 * folder is held to the rules below by its one registry line, with no edit here.
 */
const ADAPTERS: string[] = [...readFileSync(join(root, "runtimes", "index.ts"), "utf8").matchAll(/from "\.\.\/([a-z-]+)\/index\.js"/g)]
  .map((m) => m[1]!)
  .filter((f) => f !== "runtime" && f !== "schemas");
const COMPONENTS: readonly string[] = ["schemas", "runtime", "broker", ...ADAPTERS, "runtimes", "connector", "manager", "web", "cli"];
type Component = string;
const ALLOWED: Record<Component, Component[]> = {
  schemas: [],
  // The runtime seam (docs/runtimes.md): the interface every agent CLI adapter implements.
  runtime: ["schemas"],
  broker: ["schemas"],
  // The runtime adapters (launch builder, env allow-list, deny floor, persona privacy, run output):
  // below the registry, above the seam, and never reaching each other.
  ...Object.fromEntries(ADAPTERS.map((a) => [a, ["runtime", "schemas"]])),
  // The registry (runtimes/): the one component that imports the adapter folders, one line each.
  runtimes: [...ADAPTERS, "runtime", "schemas"],
  // The connector reads its CLI's facet (card meta, session-file reader, approvals) from the
  // registry, and its Claude Code plugin (connector/claude/) the plugin facet (allow rule, markers).
  connector: ["runtimes", "runtime", "broker", "schemas"],
  // The manager starts seats and runs of whatever the registry holds, through the seam alone.
  manager: ["runtimes", "runtime", "broker", "schemas"],
  // The dashboard (`cotal web`): reads the mesh through the broker's client, renders for browsers.
  web: ["broker", "schemas"],
  cli: ["manager", "connector", "runtimes", "runtime", "web", "broker", "schemas"],
};
/** Folders that are not components but import them: the benches, the shared testbed, the tests. */
const CONSUMERS = ["bench", "testbed", "test"] as const;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith(".ts") ? [p] : [];
  });
}

interface Edge {
  /** The importing folder: a component or a consumer. */
  from: string;
  file: string;
  /** The imported file, relative to the project root. */
  target: string;
  /** The imported file's top folder. */
  to: string;
}

function edgesOf(folder: string): { files: string[]; edges: Edge[] } {
  const files = sources(join(root, folder));
  const edges = files.flatMap((file) =>
    [...readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((m) => {
      const target = relative(root, resolve(dirname(file), m[1]!));
      return { from: folder, file: relative(root, file), target, to: target.split("/")[0] as string };
    }),
  );
  return { files, edges };
}

const scanned = Object.fromEntries([...COMPONENTS, ...CONSUMERS].map((f) => [f, edgesOf(f)]));
const isComponent = (f: string): f is Component => (COMPONENTS as readonly string[]).includes(f);
const crossing = COMPONENTS.flatMap((c) => scanned[c]!.edges).filter((e) => e.to !== e.from && isComponent(e.to));
const show = (es: Edge[]) => es.map((e) => `${e.file} imports ${e.target}`);

/** A component's public entry: `<component>/index.js` and nothing deeper. */
const PUBLIC_ENTRY = /^[a-z]+\/index\.js$/;
/** What tests may use besides: the internal entry, a sub-folder's own index, and the cli's modules (an application, no library entry). */
const TEST_ENTRY = /^(?:[a-z]+\/(?:index|internal)\.js|[a-z]+\/[a-z-]+\/index\.js|cli\/.+\.js)$/;

describe("architecture", () => {
  it("scanned the components' sources, their sub-folders, the benches and the tests", () => {
    // The registry's imports named the adapter folders (seven runtimes today), each one a folder here.
    expect(ADAPTERS.length).toBeGreaterThanOrEqual(7);
    for (const a of ADAPTERS) expect(statSync(join(root, a)).isDirectory(), a).toBe(true);
    expect(COMPONENTS.reduce((n, c) => n + scanned[c]!.files.length, 0)).toBeGreaterThan(50);
    expect(crossing.length).toBeGreaterThan(20);
    // Sub-folders are held to the same rules: their crossings are part of what is checked.
    const CLI_FOLDERS = ["commands", "mesh-host", "mesh-client", "identity", "team-file", "backup", "console", "web", "terminal", "install", "doctor"];
    for (const sub of ["broker/auth/", "connector/claude/", ...CLI_FOLDERS.map((f) => `cli/${f}/`)]) {
      expect(crossing.filter((e) => e.file.startsWith(sub)).length, sub).toBeGreaterThan(0);
    }
    for (const c of CONSUMERS) expect(scanned[c]!.edges.filter((e) => isComponent(e.to)).length, c).toBeGreaterThan(0);
  });

  it("dependencies point one way: cli → manager, manager → runtimes → adapters → runtime, broker → schemas", () => {
    const wrong = crossing.filter((e) => !(ALLOWED[e.from] ?? []).includes(e.to));
    expect(show(wrong)).toEqual([]);
  });

  it("no component but the registry imports an adapter folder", () => {
    // The adapter folders: what the registry may import beyond the seam and the contract.
    const wrong = crossing.filter((e) => ADAPTERS.includes(e.to) && e.from !== "runtimes");
    expect(show(wrong)).toEqual([]);
  });

  it("a component reaches another only through its index.ts, from every sub-folder", () => {
    expect(show(crossing.filter((e) => !PUBLIC_ENTRY.test(e.target)))).toEqual([]);
  });

  it("no component imports the benches, the testbed or the tests", () => {
    const wrong = COMPONENTS.flatMap((c) => scanned[c]!.edges).filter((e) => (CONSUMERS as readonly string[]).includes(e.to));
    expect(show(wrong)).toEqual([]);
  });

  it("the benches ship no test code: they use the entries and testbed/, never test/", () => {
    const wrong = scanned.bench!.edges.filter((e) => e.to === "test" || (isComponent(e.to) && !TEST_ENTRY.test(e.target)));
    expect(show(wrong)).toEqual([]);
  });

  it("the testbed (shared by tests and benches) uses only public entries, and no test or bench code", () => {
    const wrong = scanned.testbed!.edges.filter((e) => e.to === "test" || e.to === "bench" || (isComponent(e.to) && !PUBLIC_ENTRY.test(e.target)));
    expect(show(wrong)).toEqual([]);
  });

  it("tests reach a component through its public or internal entry", () => {
    // test/fixtures/ holds stand-ins for shipped entry points (connector-hook-fault is hook-main
    // with faults), bundled like them, so they import what those entry points import.
    const wrong = scanned.test!.edges.filter((e) => isComponent(e.to) && !TEST_ENTRY.test(e.target) && !e.file.startsWith("test/fixtures/"));
    expect(show(wrong)).toEqual([]);
  });

  // The runtime seam: a runtime's command-line strings stay in its adapter folder. Files that
  // predate the seam and still name Claude's flags are listed with why; the list may only shrink.
  it("no runtime's command-line strings outside its adapter folder (docs/runtimes.md)", () => {
    const ADAPTER_FOLDERS: Record<string, RegExp> = {
      claude:
        /--(?:dangerously-skip-permissions|permission-mode|append-system-prompt|allowedTools|disallowedTools|strict-mcp-config|mcp-config|plugin-dir|output-format)\b|CLAUDE_CONFIG_DIR/,
      codex:
        /--(?:dangerously-bypass-approvals-and-sandbox|dangerously-bypass-hook-trust|skip-git-repo-check|output-schema|ephemeral)\b|CODEX_HOME|approval_policy|sandbox_mode|mcp_servers/,
      opencode: /OPENCODE_(?:CONFIG|CONFIG_DIR|DISABLE_AUTOUPDATE)\b/,
      // The config dialect OpenCode and its forks share (runtime/opencode-family/): their adapters name none of it.
      "opencode-family": /default_agent/,
      gemini: /GEMINI_CLI_(?:HOME|TRUST_WORKSPACE)\b|--yolo\b|--approval-mode\b/,
      pi: /PI_CODING_AGENT_DIR\b|COTAL_PI_(?:POSTURE|MODE)\b/,
      copilot: /COPILOT_HOME\b|--(?:allow-tool|deny-tool|no-ask-user)\b/,
      kilo: /KILO_(?:CONFIG|CONFIG_DIR|DISABLE_AUTOUPDATE)\b/,
    };
    // Adapter folders own their strings; the Claude plugin (connector/claude/) is part of Claude's;
    // the OpenCode family's dialect is the seam's (runtime/opencode-family/).
    // Gemini CLI and GitHub Copilot CLI name their own flag `--output-format` as Claude does.
    const OWNERS: Record<string, string[]> = {
      claude: ["claude/", "connector/claude/", "gemini/", "copilot/"],
      codex: ["codex/"],
      opencode: ["opencode/"],
      "opencode-family": ["runtime/opencode-family/"],
      gemini: ["gemini/"],
      pi: ["pi/"],
      copilot: ["copilot/"],
      kilo: ["kilo/"],
    };
    const LEGACY: Record<string, string> = {
      "manager/transcript-carry.ts": "carry stages Claude transcripts; it moves behind the seam with Codex carry",
      "cli/mesh-host/child-env.ts": "the CLI's child allow-list passes Claude's config dir to the processes it starts",
      "cli/commands/run.ts": "`cotal run`'s help names Claude's output format",
      "cli/commands/setup.ts": "`cotal setup` (Claude's plugin) reads Claude's config dir",
    };
    const wrong: string[] = [];
    let scannedFiles = 0;
    for (const c of COMPONENTS) {
      for (const file of scanned[c]!.files) {
        const rel = relative(root, file);
        scannedFiles++;
        const text = readFileSync(file, "utf8");
        for (const [runtime, pattern] of Object.entries(ADAPTER_FOLDERS)) {
          if (OWNERS[runtime]!.some((o) => rel.startsWith(o)) || LEGACY[rel] !== undefined) continue;
          const hit = pattern.exec(text);
          if (hit) wrong.push(`${rel} names ${runtime}'s ${hit[0]}`);
        }
      }
    }
    expect(scannedFiles).toBeGreaterThan(50);
    expect(wrong).toEqual([]);
  });
});
