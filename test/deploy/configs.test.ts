// The reference configurations in deploy/ are valid for the nats-server we support.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findNatsServer } from "../harness/nats-server.js";

const dir = join(import.meta.dirname, "../../deploy");
const configs = readdirSync(dir).filter((f) => f.endsWith(".conf"));

describe("deploy/ configurations", () => {
  it("has configurations to check", () => {
    expect(configs.length).toBeGreaterThan(0);
  });
  it.each(configs)("%s passes `nats-server -t`", (file) => {
    const r = spawnSync(findNatsServer(), ["-t", "-c", join(dir, file)], { encoding: "utf8" });
    expect(r.status, r.stderr + r.stdout).toBe(0);
    expect(r.stderr + r.stdout).toMatch(/is valid/);
  });
});
