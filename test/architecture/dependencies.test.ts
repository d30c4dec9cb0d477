// Architectural rules as tests: dependencies point one way (cli → manager, connector → claude,
// broker → schemas), and a component reaches another only through its one public entry
// (index.ts): a sub-folder's own index (e.g. connector/claude/) is no door for other components.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const COMPONENTS = ["schemas", "broker", "claude", "connector", "manager", "cli"] as const;
type Component = (typeof COMPONENTS)[number];
const ALLOWED: Record<Component, Component[]> = {
  schemas: [],
  broker: ["schemas"],
  // The Claude binding (launch builder, env allow-list, deny floor, persona privacy): the manager
  // starts seats with it and the connector ships the plugin with it, so it sits below both.
  claude: ["schemas"],
  connector: ["claude", "broker", "schemas"],
  manager: ["claude", "broker", "schemas"],
  cli: ["manager", "connector", "claude", "broker", "schemas"],
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith(".ts") ? [p] : [];
  });
}

const files = COMPONENTS.flatMap((c) => sources(join(root, c)).map((file) => ({ component: c, file })));
const edges = files.flatMap(({ component, file }) =>
  [...readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((m) => {
    const target = relative(root, resolve(dirname(file), m[1]!));
    return { component, file: relative(root, file), target, to: target.split("/")[0] as string };
  }),
);
const crossing = edges.filter((e) => e.to !== e.component && (COMPONENTS as readonly string[]).includes(e.to));

describe("architecture", () => {
  it("scanned the components' sources", () => {
    expect(files.length).toBeGreaterThan(50);
    expect(crossing.length).toBeGreaterThan(20);
  });

  it("dependencies point one way: cli → manager, connector → claude, broker → schemas", () => {
    const wrong = crossing.filter((e) => !ALLOWED[e.component].includes(e.to as Component));
    expect(wrong.map((e) => `${e.file} imports ${e.target}`)).toEqual([]);
  });

  it("a component reaches another only through its index.ts", () => {
    const reaching = crossing.filter((e) => !/^[a-z]+\/index\.js$/.test(e.target));
    expect(reaching.map((e) => `${e.file} imports ${e.target}`)).toEqual([]);
  });
});
