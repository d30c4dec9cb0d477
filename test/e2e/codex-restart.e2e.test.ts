// A Codex seat killed and restarted loses nothing, through the shipped CLI: bob, a real
// Codex TUI against the Responses double, is killed (SIGKILL to its process group); a DM sent
// while he is down waits unacked on the broker; the manager restarts him under its restart policy,
// wakes him, and his hook hands the DM to his model.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeatView } from "../../schemas/index.js";
import { pidAlive, exitedOk } from "../harness/cli.js";
import { CodexPath } from "../harness/codex-path.js";
import { until } from "../../testbed/until.js";
import type { ResponsesDouble } from "../../testbed/responses-double.js";

const WHILE_DOWN = "sent while bob was down";

let u: CodexPath;
let codex: ResponsesDouble;

const cotal = (args: string[]) => u.cotal(args);
const ok = exitedOk;
const bob = async (): Promise<SeatView | undefined> =>
  ok(await cotal(["ps", "--json"]))
    .json<Array<{ seats?: SeatView[] }>>()
    .flatMap((m) => m.seats ?? [])
    .find((s) => s.name === "bob");

beforeAll(async () => {
  // A space of its own: a connector's custody is per host and principal.
  u = await CodexPath.start({ prefix: "cotal-codex-restart-", key: "sk-codex-double", shell: { COTAL_SPACE: `restart-${process.pid}` }, timeoutMs: 150_000 });
  codex = u.double;
}, 120_000);

afterAll(async () => {
  await u?.close();
});

describe("a Codex seat killed and restarted", () => {
  it("a DM sent while it was down reaches its model after the manager restarts it", async () => {
    ok(await cotal(["spawn", "-d", "--agent", "codex", "--name", "bob", "--wait-ms", "120000"]));
    const first = (await bob())!;
    expect(first.pid).toBeGreaterThan(0);
    process.kill(-first.pid!, "SIGKILL");
    await until(() => !pidAlive(first.pid!), 10_000, "bob's first process to be gone");
    ok(await cotal(["send", "dm", "bob", WHILE_DOWN, "--as", "alice", "--impersonate"]));
    await until(async () => ((await bob())?.restarts ?? 0) >= 1 && (await bob())?.state === "joined", 120_000, "bob to be restarted and joined", 500);
    await until(() => codex.turns().some((r) => JSON.stringify(r.body?.input ?? []).includes(WHILE_DOWN)), 90_000, "bob's model to be handed the DM", 500);
    expect((await bob())!.pid).not.toBe(first.pid);
  }, 300_000);
});
