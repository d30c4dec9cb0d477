// The logs of a detached mesh stay bounded: the mesh service `cotal up` starts writes its own log
// and rotates it past its bound (here lowered with COTAL_LOG_MAX_BYTES), keeping at most 4 older
// files, and `cotal logs --follow` prints every line across the rotations.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { beforeAll, describe, expect, it } from "vitest";
import { callControl } from "../../../broker/index.js";
import { localPrincipal } from "../../../schemas/index.js";
import { cleanEnv, cliFolder, CotalProcess, freePort, runCotal } from "../../harness/cli.js";
import { until } from "../../../testbed/until.js";

const { dir: project, cotal } = cliFolder("cotal-logrotate-", 30_000);
const BOUND = 4_096;
const logs = join(project, ".cotal", "logs");

beforeAll(async () => {
  const up = await runCotal(["up", "-d", "--open", "--port", String(await freePort())], {
    cwd: project,
    env: cleanEnv({ COTAL_LOG_MAX_BYTES: String(BOUND) }),
    timeoutMs: 60_000,
  });
  expect(up.code, up.stderr).toBe(0);
}, 90_000);

describe("a detached mesh's logs", () => {
  it("rotate past the bound, keep at most 5 files, and --follow prints every line across the rotations", async () => {
    const follow = CotalProcess.spawn(["logs", "mesh-service", "--follow", "--lines", "1", "--format", "json"], { cwd: project });
    try {
      await until(() => follow.lines.length >= 1, 10_000, "logs --follow to print the last line");
      const status = await cotal("status", "--json");
      const nc = await connect({ servers: status.json<{ server: string }>().server });
      const me = localPrincipal("rotor");
      const channels = Array.from({ length: 60 }, (_, i) => `rot${i}`);
      const followed = () =>
        follow
          .jsonLines<{ msg?: string; channel?: string }>()
          .filter((l) => l.msg === "left durable channel")
          .map((l) => l.channel);
      try {
        // Each join and leave is an info line of the mesh service (≈ 250 bytes): 120 lines, several
        // rotations. Paced by what --follow printed: it reads every 300 ms, and a file that rotated
        // twice in between would have lines it cannot find any more.
        for (const [i, channel] of channels.entries()) {
          await callControl(nc, "default", "join", me, { channel });
          await callControl(nc, "default", "leave", me, { channel });
          await until(
            () => followed().length > i,
            10_000,
            () => `--follow to print the leave of ${channel}: ${followed().join(" ")}`,
          );
        }
      } finally {
        await nc.close();
      }
      expect(followed()).toEqual(channels);
    } finally {
      await follow.stop();
    }
    const files = readdirSync(logs).filter((f) => f.startsWith("mesh-service.log"));
    expect(files.sort()).toEqual(["mesh-service.log", "mesh-service.log.1", "mesh-service.log.2", "mesh-service.log.3", "mesh-service.log.4"]);
    for (const f of files) expect(statSync(join(logs, f)).size, f).toBeLessThanOrEqual(BOUND);
    expect(existsSync(join(logs, "mesh-service.log.5"))).toBe(false);
  }, 90_000);
});
