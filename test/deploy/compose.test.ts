// deploy/container/compose.yaml holds together without docker: three nats nodes on the shipped
// node configs (each of which passes `nats-server -t` in configs.test.ts), ports on loopback only,
// and the mesh service and manager on the cotal image pointed at all three nodes. Running it is
// done by hand (docs/testing.md, "Container tests"); the image itself runs in test/containers.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { z } from "zod";
import { projectRoot } from "../harness/build.js";

const Service = z.object({
  image: z.string(),
  command: z.array(z.string()).optional(),
  volumes: z.array(z.string()).optional(),
  ports: z.array(z.string()).optional(),
  environment: z.record(z.string(), z.string()).optional(),
});
const Compose = z.object({ services: z.record(z.string(), Service) });

const dir = join(projectRoot, "deploy/container");
const compose = Compose.parse(parse(readFileSync(join(dir, "compose.yaml"), "utf8"), { merge: true }));

describe("deploy/container/compose.yaml", () => {
  it("runs three nats nodes on the shipped configs, published on loopback only", () => {
    for (const n of ["n1", "n2", "n3"]) {
      const s = compose.services[n]!;
      expect(s.image).toBe("cotal-nats:local");
      const conf = s.volumes?.find((v) => v.endsWith(":/etc/nats/nats.conf:ro"));
      expect(conf, `${n} mounts its config`).toBeDefined();
      expect(existsSync(join(dir, conf!.split(":")[0]!))).toBe(true);
      expect(readFileSync(join(dir, conf!.split(":")[0]!), "utf8")).toContain(`server_name: ${n}`);
      for (const p of s.ports ?? []) expect(p).toMatch(/^127\.0\.0\.1:/);
    }
  });

  it("runs the mesh service and a manager on the cotal image, against all three nodes", () => {
    const all = "nats://n1:4222,nats://n2:4222,nats://n3:4222";
    expect(compose.services.mesh).toMatchObject({ image: "cotal:local" });
    expect(compose.services.mesh!.command).toEqual(expect.arrayContaining(["mesh", "serve", "--server", all]));
    expect(compose.services.manager).toMatchObject({ image: "cotal:local", environment: { COTAL_SERVER: all } });
    expect(compose.services.manager!.command?.[0]).toBe("manager");
  });
});
