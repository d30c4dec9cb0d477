// The mesh root found by walking up to .cotal/, the nats-server config it renders, and --sync.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findMeshRoot, MeshRoot } from "../../../cli/mesh-host/mesh-root.js";
import { renderServerConfig } from "../../../cli/mesh-host/nats-process.js";
import { DEFAULT_SYNC, SyncInterval } from "../../../cli/mesh-host/sync-interval.js";

describe("mesh root", () => {
  it("is found by walking up from a subfolder to the .cotal/ that holds mesh.json", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cotal-root-"));
    try {
      const deep = join(dir, "a", "b");
      mkdirSync(deep, { recursive: true });
      expect(findMeshRoot(deep)).toBeUndefined();
      const root = new MeshRoot(dir);
      root.ensure();
      expect(findMeshRoot(deep), "a .cotal/ without mesh.json is not a mesh").toBeUndefined();
      root.writeInfo({
        server: "nats://127.0.0.1:4999",
        space: "default",
        mode: "open",
        host: "127.0.0.1",
        port: 4999,
        storeDir: join(dir, "s"),
        startedAt: new Date().toISOString(),
      });
      expect(findMeshRoot(deep)?.project).toBe(dir);
      expect(readFileSync(join(dir, ".cotal", ".gitignore"), "utf8")).toContain("*");
      writeFileSync(root.meshJson, "{ not json");
      expect(() => root.readInfo()).toThrow(/not valid JSON/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("the server config turns JetStream on, syncs before every acknowledgement, and listens where asked", () => {
    const conf = renderServerConfig({ host: "127.0.0.1", port: 4333, storeDir: "/s", portsDir: "/r", space: "default", sync: DEFAULT_SYNC });
    expect(conf).toContain('listen: "127.0.0.1:4333"');
    expect(conf).toMatch(/jetstream \{\n {2}store_dir: "\/s"\n {2}sync_interval: always\n\}/);
    expect(renderServerConfig({ host: "127.0.0.1", port: "auto", storeDir: "/s", portsDir: "/r", space: "x", sync: "2m" })).toMatch(
      /listen: "127.0.0.1:-1"[\s\S]*sync_interval: "2m"/,
    );
  });

  it("--sync takes always or a positive duration with one unit, and refuses anything else saying what it takes", () => {
    for (const ok of ["always", "500ms", "30s", "2m", "1h"]) expect(SyncInterval.parse(ok)).toBe(ok);
    for (const bad of ["", "never", "0s", "2", "1m30s", "-1s", "2 m", "always;x"]) {
      const r = SyncInterval.safeParse(bad);
      expect(r.success, bad).toBe(false);
      expect(r.error?.issues[0]?.message).toMatch(/--sync must be `always`.*500ms/);
    }
  });
});
