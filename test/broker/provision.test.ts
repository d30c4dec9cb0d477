import { jetstreamManager, RetentionPolicy } from "@nats-io/jetstream";
import { describe } from "vitest";
import { ensureSpace, STORAGE_DEFAULTS, StreamConflictError } from "../../broker/index.js";
import { EVENT_PLANE } from "../../schemas/index.js";
import { expect, test } from "../harness/fixtures.js";
import { serviceConnection } from "../harness/mesh-mode.js";

describe("provisioning a space", () => {
  test("creates the streams and buckets once; a second run changes nothing", async ({ nats }) => {
    const nc = await serviceConnection(nats, "prov");
    try {
      const first = await ensureSpace(nc, "prov");
      expect(first.created).toEqual([
        "CHAT_prov",
        "EVENTS_prov",
        "DM_prov",
        "TASK_prov",
        "SEATS_prov",
        "cotal_presence_prov",
        "cotal_channels_prov",
        "cotal_members_prov",
        "cotal_managers_prov",
        "cotal_artifacts_prov",
      ]);
      const second = await ensureSpace(nc, "prov");
      expect(second.created).toEqual([]);
      expect(second.updated).toEqual([]);
      expect(second.unchanged).toHaveLength(10);

      const jsm = await jetstreamManager(nc);
      const chat = (await jsm.streams.info("CHAT_prov")).config;
      // A sender's posts to one channel are capped, and the next is refused (never its oldest evicted).
      expect(chat.max_msgs_per_subject).toBe(STORAGE_DEFAULTS.chatPerSender);
      expect(chat.discard_new_per_subject).toBe(true);
      expect(chat.allow_direct).toBe(true);
      // The event plane rolls: an actor's oldest frames leave.
      const events = (await jsm.streams.info("EVENTS_prov")).config;
      expect({ perSubject: events.max_msgs_per_subject, discardNew: events.discard_new_per_subject ?? false }).toEqual({
        perSubject: EVENT_PLANE.framesPerActor,
        discardNew: false,
      });
      expect((await jsm.streams.info("DM_prov")).config.allow_direct).toBe(false);
      expect((await jsm.streams.info("TASK_prov")).config.retention).toBe(RetentionPolicy.Workqueue);
      const artifacts = (await jsm.streams.info("OBJ_cotal_artifacts_prov")).config;
      expect({ maxBytes: artifacts.max_bytes, discard: artifacts.discard }).toEqual({ maxBytes: 1024 ** 3, discard: "new" });
    } finally {
      await nc.close();
    }
  });

  test("reconciles a drifted setting in place without losing messages", async ({ nats }) => {
    const nc = await serviceConnection(nats, "drift");
    try {
      await ensureSpace(nc, "drift");
      const jsm = await jetstreamManager(nc);
      await jsm.streams.update("CHAT_drift", { max_msgs_per_subject: 5 });
      const report = await ensureSpace(nc, "drift");
      expect(report.updated).toEqual(["CHAT_drift"]);
      expect((await jsm.streams.info("CHAT_drift")).config.max_msgs_per_subject).toBe(STORAGE_DEFAULTS.chatPerSender);
    } finally {
      await nc.close();
    }
  });

  test("a conflicting stream is reported with what differs and how to fix it, never recreated", async ({ nats }) => {
    const nc = await serviceConnection(nats, "clash");
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: "DM_clash", subjects: ["elsewhere.>"], retention: RetentionPolicy.Interest });
      await nc.publish("elsewhere.x", "keep me");
      const err = await ensureSpace(nc, "clash").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StreamConflictError);
      expect(String(err)).toMatch(/subjects are \[elsewhere\.>\], Cotal needs \[cotal\.clash\.inst\.>\]/);
      expect(String(err)).toMatch(/retention is interest, Cotal needs workqueue/);
      expect(String(err)).toMatch(/will not recreate it/);
      expect((await jsm.streams.info("DM_clash")).config.subjects).toEqual(["elsewhere.>"]);
    } finally {
      await nc.close();
    }
  });
});
