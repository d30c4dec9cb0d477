// An idle joined member hears nothing while its peers change nothing: no beat, no presence
// record, no message, and on a single server not even a keepalive of its own pulls (they ask for
// none and end only every 90 s, long after this window: broker/quiet-pull.ts), over many
// heartbeats of every endpoint. A peer's
// change still reaches it at once, and a death as one deletion from the mesh service. Real
// nats-server; the window is counted in beats, not time.
import { afterEach, describe } from "vitest";
import type { Roster } from "../../broker/index.js";
import type { PresenceStatus } from "../../schemas/index.js";
import { expect, test, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { isKeepalive, tapInbound } from "../../bench/wire-tap.js";

/** Fast timing: beats every 250 ms, offline after 2.5 s without one. */
const BEAT_MS = 250;
const LIVENESS_MS = 2_500;
/** The window: this many beats of every endpoint reach the mesh service. */
const WINDOW_BEATS = 12;

let mesh: TestMesh | undefined;
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
});

/** Resolves when `id` reads `status` in `roster` (at once if it already does). */
function statusIn(roster: Roster, id: string, status: PresenceStatus): Promise<void> {
  if (roster.get(id)?.status === status) return Promise.resolve();
  return new Promise((resolve) => {
    const off = roster.onChange(() => {
      if (roster.get(id)?.status !== status) return;
      off();
      resolve();
    });
  });
}

describe("an idle member hears nothing while nobody changes anything", () => {
  test("no beat, presence or message reaches it over 12 beats of every peer; a peer's change and death still do", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "quiet", { livenessMs: LIVENESS_MS });
    const opts = { heartbeatMs: BEAT_MS };
    const member = await mesh.joined("idle", opts);
    const peers = [await mesh.joined("carol", opts), await mesh.joined("dave", opts), await mesh.joined("erin", opts)];
    for (const ep of [member, ...peers]) await ep.joinChannel("general");
    const roster = await member.roster();
    // Settled: the member holds every peer's last write (idle, in #general).
    await until(
      () => peers.every((p) => roster.get(p.id)?.status === "idle" && roster.get(p.id)?.presence.channels.includes("general")),
      10_000,
      "the member to see every peer idle in #general",
    );
    await until(() => [member, ...peers].every((e) => e.nc.stats().outMsgs > 0), 10_000, "every endpoint beating");
    // A view asks for its snapshot once more a moment after loading (SPEC §5): that answer is
    // the view's own load, not a peer's idleness, so the window opens after it.
    await roster.settled;

    const { heard } = tapInbound(member.nc, { keep: true });
    const beats = mesh.service.beatsConnection;
    const beats0 = beats.stats().inMsgs;
    await until(() => beats.stats().inMsgs - beats0 >= WINDOW_BEATS * 4, 30_000, `${WINDOW_BEATS} beats from each of 4 endpoints`);
    const window = heard.splice(0);
    // Nothing at all on its wire: no peer's word, and no JetStream status for its pulls either.
    expect(window.map((h) => `${h.subject}${isKeepalive(h) ? " (a pull's keepalive)" : ""}`)).toEqual([]);

    // A change reaches it at once: one presence record, the peer's.
    const [carol, dave] = peers as [(typeof peers)[0], (typeof peers)[0]];
    await carol.setPresence({ status: "working" });
    await statusIn(roster, carol.id, "working");
    const change = heard.splice(0).filter((h) => !isKeepalive(h));
    expect(change.map((h) => h.subject)).toEqual([`$KV.cotal_presence_quiet.${carol.id}`]);

    // A death reaches it as the mesh service's deletion of the key, after the liveness window.
    await dave.nc.close();
    await statusIn(roster, dave.id, "offline");
    expect(heard.filter((h) => !isKeepalive(h)).map((h) => h.subject)).toEqual([`$KV.cotal_presence_quiet.${dave.id}`]);
  }, 60_000);
});
