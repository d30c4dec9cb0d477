// Every control command is documented for other languages: its args and reply each have a
// JSON Schema file in docs/schema/, and the table's shapes hold what the rail carries.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CONTROL_COMMANDS, LaunchMaterial, MESH_COMMANDS } from "../../schemas/index.js";

const dir = join(import.meta.dirname, "../../docs/schema");
const commands = Object.keys(CONTROL_COMMANDS);

describe("the control command table", () => {
  it("holds the mesh endpoint's commands", () => {
    expect(commands.length).toBeGreaterThanOrEqual(10);
    for (const c of Object.keys(MESH_COMMANDS)) expect(CONTROL_COMMANDS[c as keyof typeof CONTROL_COMMANDS].endpoint).toBe("mesh");
  });

  it.each(commands)("%s has an args and a reply JSON Schema file naming it", (command) => {
    for (const part of ["args", "reply"]) {
      const file = join(dir, `control.${command}.${part}.schema.json`);
      expect(existsSync(file), file).toBe(true);
      const doc = JSON.parse(readFileSync(file, "utf8")) as { title: string; description: string };
      expect(doc.title).toBe(`control.${command}.${part}`);
      expect(doc.description).toContain(`\`${command}\``);
    }
  });

  it("command names are control subject tokens", () => {
    for (const c of commands) expect(c).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });

  it("args ignore unknown fields, so a newer caller reaches an older service", () => {
    expect(CONTROL_COMMANDS.join.args.parse({ channel: "general", future: 1 })).toEqual({ channel: "general" });
  });

  it("mint args fill their defaults; a bad user key is refused naming the field", () => {
    const userPub = `U${"A".repeat(55)}`;
    expect(CONTROL_COMMANDS.mint.args.parse({ name: "bob", profile: "agent", userPub })).toMatchObject({
      allowSubscribe: [],
      allowPublish: [],
      provision: false,
    });
    const r = CONTROL_COMMANDS.mint.args.safeParse({ name: "bob", profile: "agent", userPub: "nope" });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(["userPub"]);
  });

  it("the launch material has its JSON Schema too", () => {
    expect(existsSync(join(dir, "LaunchMaterial.schema.json"))).toBe(true);
    expect(LaunchMaterial.safeParse({ server: "nats://h:1", space: "s", name: "a", controlToken: "x".repeat(32), typo: 1 }).success).toBe(false);
  });
});
