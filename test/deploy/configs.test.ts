// The reference files in deploy/ are valid for the tools we support: every nats-server config
// (in any sub-folder) passes `nats-server -t`, the cluster configs also with a real operator-mode
// auth.conf rendered by the auth store, and the systemd units pass `systemd-analyze verify`
// (when it is installed) and keep the properties the docs promise.
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { AuthStore } from "../../broker/index.js";
import { findNatsServer } from "../../testbed/nats-server.js";

const dir = join(import.meta.dirname, "../../deploy");
const files = (readdirSync(dir, { recursive: true }) as string[]).map((f) => join(dir, f));
/** Every config, except fragments included by others (they are checked through their includer). */
const configs = files.filter((f) => f.endsWith(".conf") && !f.endsWith("/auth.conf")).map((f) => relative(dir, f));
const units = files.filter((f) => /\/systemd\/[^/]+\.(service|timer)$/.test(f)).map((f) => relative(dir, f));
const temp: string[] = [];

afterAll(() => {
  for (const t of temp) rmSync(t, { recursive: true, force: true });
});

function natsTest(file: string) {
  const r = spawnSync(findNatsServer(), ["-t", "-c", file], { encoding: "utf8" });
  return { ok: r.status === 0 && /is valid/.test(r.stderr + r.stdout), out: r.stderr + r.stdout };
}

describe("deploy/ nats-server configurations", () => {
  it("has configurations to check, in sub-folders too", () => {
    expect(configs.length).toBeGreaterThan(3);
    expect(configs).toContain("cluster/n1.conf");
  });

  it.each(configs.filter((f) => /jetstream\s*{/.test(readFileSync(join(dir, f), "utf8"))))(
    "%s syncs JetStream before every acknowledgement (sync_interval: always)",
    (file) => {
      expect(readFileSync(join(dir, file), "utf8")).toMatch(/jetstream\s*{[^}]*\n\s*sync_interval:\s*always\s*\n[^}]*}/);
    },
  );

  it.each(configs)("%s passes `nats-server -t`", (file) => {
    const r = natsTest(join(dir, file));
    expect(r.ok, r.out).toBe(true);
  });

  it.each(["n1", "n2", "n3"])("cluster/%s.conf passes with the operator-mode auth.conf a mesh renders", async (node) => {
    const tmp = mkdtempSync(join(tmpdir(), "cotal-deploy-"));
    temp.push(tmp);
    cpSync(join(dir, "cluster"), tmp, { recursive: true });
    const store = await AuthStore.open(join(tmp, "auth"));
    await store.ensureSpace("default");
    writeFileSync(join(tmp, "auth.conf"), await store.serverConfig(join(tmp, "resolver")));
    const r = natsTest(join(tmp, `${node}.conf`));
    expect(r.ok, r.out).toBe(true);
  });

  it("ships a closed placeholder auth.conf: nobody can connect until it is replaced", () => {
    const text = readFileSync(join(dir, "cluster/auth.conf"), "utf8");
    expect(text).toMatch(/authorization\s*{\s*users:\s*\[\s*{\s*nkey:\s*U[A-Z2-7]{55}\s*}\s*\]\s*}/);
  });
});

describe("deploy/systemd units", () => {
  const unit = (f: string) => readFileSync(join(dir, f), "utf8");
  it("has the nats-server, mesh service, manager and health-check units", () => {
    expect(units.sort()).toEqual([
      "systemd/cotal-health.service",
      "systemd/cotal-health.timer",
      "systemd/cotal-manager.service",
      "systemd/cotal-mesh.service",
      "systemd/cotal-nats.service",
    ]);
  });

  it.each(["systemd/cotal-nats.service", "systemd/cotal-mesh.service", "systemd/cotal-manager.service"])(
    "%s restarts always and runs as the cotal user",
    (f) => {
      const text = unit(f);
      expect(text).toMatch(/^Restart=always$/m);
      expect(text).toMatch(/^User=cotal$/m);
      expect(text).toMatch(/^ExecStart=\S+/m);
      expect(text).toMatch(/^WantedBy=multi-user\.target$/m);
    },
  );

  it("the health check maps each component's exit bit to its unit", () => {
    const text = unit("systemd/cotal-health.service");
    expect(text).toMatch(/cotal status --components/);
    for (const [bit, svc] of [
      [8, "cotal-nats"],
      [16, "cotal-mesh"],
      [32, "cotal-manager"],
    ] as const) {
      expect(text).toContain(`[ $((rc & ${bit})) -ne 0 ] && systemctl restart ${svc}.service`);
    }
    expect(unit("systemd/cotal-health.timer")).toMatch(/^OnUnitActiveSec=\d+/m);
  });

  const analyze = spawnSync("systemd-analyze", ["--version"], { encoding: "utf8" });
  it.skipIf(analyze.status !== 0).each(units)("%s passes `systemd-analyze verify`", (f) => {
    const r = spawnSync("systemd-analyze", ["verify", "--man=no", join(dir, f)], { encoding: "utf8" });
    // The cotal binary is not installed where tests run: that one complaint is expected.
    const problems = (r.stderr + r.stdout)
      .split("\n")
      .filter((l) => l.trim() && !/Command \/usr\/local\/bin\/cotal is not executable: No such file or directory/.test(l));
    expect(problems, problems.join("\n")).toEqual([]);
  });
});
