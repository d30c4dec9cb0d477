// Names of a space's streams, buckets and durables, each pinned exactly (once survivors of mutation
// testing): what a restore, a permission and a second reader must agree on.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { durables, filters, localPrincipal, names } from "../../schemas/index.js";

const alice = localPrincipal("alice");
const uid = "abcdefghijklmnopqrstuvwxyz";

describe("names of a space's streams and buckets", () => {
  it("are fixed by the space", () => {
    expect(names.chatStream("demo")).toBe("CHAT_demo");
    expect(names.dmStream("demo")).toBe("DM_demo");
    expect(names.taskStream("demo")).toBe("TASK_demo");
    expect(names.seatsStream("demo")).toBe("SEATS_demo");
    expect(names.presenceBucket("demo")).toBe("cotal_presence_demo");
    expect(names.channelsBucket("demo")).toBe("cotal_channels_demo");
    expect(names.membersBucket("demo")).toBe("cotal_members_demo");
    expect(names.managersBucket("demo")).toBe("cotal_managers_demo");
    expect(names.xferStream("demo", "m1")).toBe("XFER_demo_m1");
  });
  it("refuse a space or instance that is not a token", () => {
    for (const f of [
      names.chatStream,
      names.dmStream,
      names.taskStream,
      names.seatsStream,
      names.presenceBucket,
      names.channelsBucket,
      names.membersBucket,
      names.managersBucket,
    ]) {
      expect(() => f("a.b")).toThrow(/Invalid space "a.b"/);
    }
    expect(() => names.xferStream("demo", "m.1")).toThrow(/Invalid instance "m.1"/);
  });
  it("filters for control calls and a seat's log", () => {
    expect(filters.control("demo", "mesh", "one", "join")).toBe("cotal.demo.ep.mesh.one.join.*.*");
    expect(() => filters.control("demo", "me.sh", "one", "join")).toThrow(/Invalid endpoint/);
    expect(() => filters.control("demo", "mesh", "o*", "join")).toThrow(/Invalid target/);
    expect(() => filters.control("demo", "mesh", "one", "jo>")).toThrow(/Invalid command/);
    expect(filters.seat("demo", alice)).toBe("cotal.demo.seat.local.alice.*.*");
    expect(filters.seatsOf("demo", "cotal_run")).toBe("cotal.demo.seat.cotal_run.*.*.*");
    expect(filters.kind("demo", "inst")).toBe("cotal.demo.inst.>");
    expect(() => filters.anycast("demo", "r.x")).toThrow(/Invalid role/);
  });
});

describe("durable names", () => {
  it("a channel membership: the dashed principal (and uid) and 12 hex of sha256(channel)", () => {
    const digest = createHash("sha256").update("team.backend").digest("hex").slice(0, 12);
    expect(durables.channel(alice, "team.backend")).toBe(`ch_local-alice-${digest}`);
    expect(durables.channel(alice, "team.backend", uid)).toBe(`ch_local-alice-${uid}-${digest}`);
    expect(() => durables.channel(alice, "team.backend", "NOT-A-UID")).toThrow(/Invalid lifecycle uid/);
    expect(() => durables.anycast("a.b")).toThrow(/Invalid role "a.b"/);
  });
});
