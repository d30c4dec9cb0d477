import { describe, expect, test } from "vitest";
import { inboxPrefix, leafHostManager, permissionsFor, type IdentitySpec } from "../../../broker/internal.js";
import {
  anycastSubject,
  beatSubject,
  chatSubject,
  controlSubject,
  dmSubject,
  durables,
  eventsSubject,
  postSubject,
  JS_API,
  seatSubject,
  localPrincipal,
  names,
  patterns,
  subjectMatches,
  xferChunkSubject,
  type Principal,
} from "../../../schemas/index.js";

/**
 * What each profile's client publishes and subscribes (built with the same subject builders the
 * endpoint uses) is allowed by the permissions minted for it, and the same subjects built for any
 * other principal are refused. Randomised over names, channels and roles, seeded for repeatability.
 */
const SPACE = "prop";
/** Clients reach JetStream's API under their account's import prefix. */
const API = JS_API;

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32;
}
const ALPHA = "abcdefghijklmnopqrstuvwxyz0123456789_";
function token(r: () => number, len = 3 + Math.floor(r() * 10)): string {
  let t = "";
  for (let i = 0; i < len; i++) t += ALPHA[Math.floor(r() * ALPHA.length)];
  return /^[a-z]/.test(t) ? t : `a${t}`;
}

const allows = (list: string[] | undefined, subject: string) => (list ?? []).some((p) => subjectMatches(p, subject));

/** The subjects an agent's own client publishes to, and subscribes to. */
function agentTraffic(who: Principal, channels: string[], role: string, peer: Principal) {
  return {
    pub: [
      ...channels.map((ch) => chatSubject(SPACE, who, ch)),
      // Its own event plane, as the connector writes it (its own subject kind).
      postSubject(SPACE, who, `events.${who.owner}.${who.actor}`),
      dmSubject(SPACE, peer, who),
      anycastSubject(SPACE, token(rng(1)), who),
      ...["register", "join", "leave", "roster", "history", "channels", "lookup", "whoami", "ping"].map((c) => controlSubject(SPACE, "mesh", "one", c, who)),
      patterns.presenceKey(SPACE, who),
      `${API}.CONSUMER.INFO.${names.dmStream(SPACE)}.${durables.dm(who)}`,
      `${API}.CONSUMER.MSG.NEXT.${names.dmStream(SPACE)}.${durables.dm(who)}`,
      `$JS.ACK.${names.dmStream(SPACE)}.${durables.dm(who)}.1.2.3.4.5`,
      `${API}.CONSUMER.MSG.NEXT.${names.taskStream(SPACE)}.${durables.anycast(role)}`,
      ...channels.map((ch) => `${API}.CONSUMER.MSG.NEXT.${names.chatStream(SPACE)}.${durables.channel(who, ch)}`),
    ],
    sub: [`_INBOX.${who.owner}.${who.actor}.abc`, ...channels.map((ch) => chatSubject(SPACE, peer, ch)), patterns.presenceKey(SPACE, peer)],
  };
}

describe("permissions follow the subject grammar", () => {
  test("only a credential that runs a seat may write its event plane: never a scoped reader", () => {
    const r = rng(7);
    for (let i = 0; i < 100; i++) {
      const who = localPrincipal(token(r));
      const channel = token(r);
      const plane = eventsSubject(SPACE, who);
      const may = (extra: Partial<IdentitySpec>) => allows(permissionsFor({ space: SPACE, who, profile: "agent", ...extra }).pub?.allow, plane);
      // A scoped reader: it reads a plane (or a channel) and publishes on none.
      expect(may({ allowSubscribe: [`events.local.${token(r)}`] }), "scoped reader").toBe(false);
      expect(may({ allowSubscribe: [channel] })).toBe(false);
      expect(may({ allowSubscribe: [channel], allowPublish: [channel] }), "may post, so it runs a seat").toBe(true);
      expect(may({ allowSubscribe: [channel], allowPublish: [channel], events: false }), "--no-events").toBe(false);
      expect(may({ events: true }), "a seat with no channels").toBe(true);
      // A plane's name in allowPublish grants no post subject and no plane.
      const perms = permissionsFor({ space: SPACE, who, profile: "agent", allowPublish: [`events.${who.owner}.${who.actor}`], events: false });
      expect(allows(perms.pub?.allow, plane)).toBe(false);
      expect(allows(perms.pub?.allow, chatSubject(SPACE, who, `events.${who.owner}.${who.actor}`))).toBe(false);
      // Nobody else's plane, whatever it holds.
      expect(
        allows(
          permissionsFor({ space: SPACE, who, profile: "agent", allowPublish: [channel], events: true }).pub?.allow,
          eventsSubject(SPACE, localPrincipal(`${who.actor}x`)),
        ),
      ).toBe(false);
    }
  });

  test("an agent may send and bind everything its client uses, and none of it as anyone else", () => {
    const r = rng(42);
    for (let i = 0; i < 200; i++) {
      const who = localPrincipal(token(r));
      const other = localPrincipal(`${who.actor}x`);
      const channels = [token(r), `${token(r)}.${token(r)}`];
      const role = token(r);
      const spec: IdentitySpec = { space: SPACE, who, profile: "agent", allowSubscribe: channels, allowPublish: channels, role };
      const perms = permissionsFor(spec);
      const mine = agentTraffic(who, channels, role, other);
      for (const s of mine.pub) expect(allows(perms.pub?.allow, s), `${who.actor} may publish ${s}`).toBe(true);
      // The channel registry is everyone's to read.
      expect(allows(perms.pub?.allow, `${API}.STREAM.MSG.GET.KV_${names.channelsBucket(SPACE)}`)).toBe(true);
      for (const s of mine.sub) expect(allows(perms.sub?.allow, s), `${who.actor} may subscribe ${s}`).toBe(true);
      // The same traffic built for another principal: refused (except the shared presence read).
      const theirs = agentTraffic(other, channels, `${role}x`, who);
      for (const s of theirs.pub) expect(allows(perms.pub?.allow, s), `${who.actor} may not publish ${s}`).toBe(false);
      expect(allows(perms.sub?.allow, `_INBOX.${other.owner}.${other.actor}.abc`)).toBe(false);
      expect(allows(perms.sub?.allow, chatSubject(SPACE, other, `${channels[0]}x`))).toBe(false);
      expect(allows(perms.sub?.allow, dmSubject(SPACE, other, who))).toBe(false);
      // No agent may reach the members bucket or create, delete or purge anything.
      for (const s of [
        `${API}.STREAM.MSG.GET.KV_${names.membersBucket(SPACE)}`,
        `${API}.CONSUMER.CREATE.${names.dmStream(SPACE)}`,
        `${API}.STREAM.PURGE.${names.dmStream(SPACE)}`,
        `${API}.CONSUMER.MSG.NEXT.${names.dmStream(SPACE)}.${durables.dm(localPrincipal("a"))}`,
      ]) {
        expect(allows(perms.pub?.allow, s), s).toBe(false);
      }
    }
  });

  test("a reader publishes nothing that is stored or reaches anyone; it reads and binds only its scope", () => {
    const r = rng(25);
    for (let i = 0; i < 200; i++) {
      const who = localPrincipal(token(r));
      const other = localPrincipal(`${who.actor}x`);
      const channel = `${token(r)}.${token(r)}`;
      const plane = `events.local.${token(r)}`;
      // Half of them are minted for event planes only: no channel, so no membership calls at all.
      const scope = i % 2 ? [plane] : [channel, plane];
      const perms = permissionsFor({ space: SPACE, who, profile: "reader", allowSubscribe: scope });
      const may = (s: string) => allows(perms.pub?.allow, s);
      for (const s of [
        ...scope.map((ch) => chatSubject(SPACE, who, ch)),
        chatSubject(SPACE, who, "general"),
        eventsSubject(SPACE, who),
        dmSubject(SPACE, other, who),
        anycastSubject(SPACE, token(r), who),
        patterns.presenceKey(SPACE, who),
        beatSubject(SPACE, who),
        seatSubject(SPACE, localPrincipal(token(r)), who),
        ...["register", "mint", "revoke"].map((c) => controlSubject(SPACE, "mesh", "one", c, who)),
        ...["artifact-begin", "artifact-chunk", "artifact-commit"].map((c) => controlSubject(SPACE, "artifact", "one", c, who)),
        controlSubject(SPACE, "manager", "one", "run", who),
        controlSubject(SPACE, "xfer", "one", "xfer-remove", who),
        xferChunkSubject(SPACE, token(r), `sha256:${"a".repeat(64)}`, 0),
        `${API}.STREAM.MSG.GET.${names.xferStream(SPACE, token(r))}`,
        `$KV.${names.channelsBucket(SPACE)}.general`,
        `${API}.CONSUMER.MSG.NEXT.${names.dmStream(SPACE)}.${durables.dm(who)}`,
        `${API}.CONSUMER.MSG.NEXT.${names.chatStream(SPACE)}.${durables.channel(who, plane)}`,
        `${API}.CONSUMER.MSG.NEXT.${names.chatStream(SPACE)}.${durables.channel(other, channel)}`,
        `${API}.CONSUMER.CREATE.${names.chatStream(SPACE)}`,
        // Its reads, as anyone else.
        controlSubject(SPACE, "mesh", "one", "history", other),
      ]) {
        expect(may(s), `a reader may not publish ${s}`).toBe(false);
      }
      for (const c of ["roster", "history", "channels", "lookup", "whoami", "ping"]) expect(may(controlSubject(SPACE, "mesh", "one", c, who)), c).toBe(true);
      expect(may(controlSubject(SPACE, "artifact", "one", "artifact-get", who))).toBe(true);
      expect(may(`${API}.STREAM.MSG.GET.KV_${names.channelsBucket(SPACE)}`)).toBe(true);
      // Its own memberships of the channels in its scope: created, bound, acked, ended.
      const hasChannel = scope.includes(channel);
      for (const c of ["join", "leave"]) expect(may(controlSubject(SPACE, "mesh", "one", c, who)), c).toBe(hasChannel);
      expect(may(`${API}.CONSUMER.MSG.NEXT.${names.chatStream(SPACE)}.${durables.channel(who, channel)}`)).toBe(hasChannel);
      expect(may(`$JS.ACK.${names.chatStream(SPACE)}.${durables.channel(who, channel)}.1.2.3.4.5`)).toBe(hasChannel);
      // It reads its scope live, its inbox and presence; nothing else.
      for (const ch of scope) expect(allows(perms.sub?.allow, ch === plane ? `cotal.${SPACE}.${plane}` : chatSubject(SPACE, other, ch)), ch).toBe(true);
      expect(allows(perms.sub?.allow, `_INBOX.${who.owner}.${who.actor}.abc`)).toBe(true);
      expect(allows(perms.sub?.allow, patterns.presenceKey(SPACE, other))).toBe(true);
      for (const s of [
        chatSubject(SPACE, other, `${channel}x`),
        dmSubject(SPACE, who, other),
        `_INBOX.${other.owner}.${other.actor}.abc`,
        beatSubject(SPACE, other),
      ]) {
        expect(allows(perms.sub?.allow, s), `a reader may not subscribe ${s}`).toBe(false);
      }
    }
  });

  test("observers and admins publish nothing but read-only control calls as themselves", () => {
    const r = rng(7);
    for (let i = 0; i < 100; i++) {
      const who = localPrincipal(token(r));
      const other = localPrincipal(`${who.actor}x`);
      for (const profile of ["observer", "admin"] as const) {
        const perms = permissionsFor({ space: SPACE, who, profile });
        for (const c of ["roster", "history", "channels", "ping"]) expect(allows(perms.pub?.allow, controlSubject(SPACE, "mesh", "one", c, who))).toBe(true);
        for (const s of [
          chatSubject(SPACE, who, "general"),
          dmSubject(SPACE, other, who),
          controlSubject(SPACE, "mesh", "one", "mint", who),
          controlSubject(SPACE, "mesh", "one", "roster", other),
          patterns.presenceKey(SPACE, who),
        ]) {
          expect(allows(perms.pub?.allow, s), `${profile} may not publish ${s}`).toBe(false);
        }
        expect(allows(perms.sub?.allow, dmSubject(SPACE, who, other))).toBe(profile === "admin");
      }
    }
  });

  test("a carried transcript is written by the operator alone and read by its target manager alone, live or from its stream", () => {
    const r = rng(30);
    const digest = `sha256:${"c".repeat(64)}`;
    for (let i = 0; i < 100; i++) {
      const instance = token(r);
      const other = `${instance}x`;
      const chunk = (of: string) => xferChunkSubject(SPACE, of, digest, Math.floor(r() * 300));
      const read = (of: string) => `${API}.STREAM.MSG.GET.${names.xferStream(SPACE, of)}`;
      const may = (spec: IdentitySpec) => {
        const p = permissionsFor(spec);
        const sub = (s: string) => allows(p.sub?.allow, s) && !allows(p.sub?.deny, s);
        return { pub: (s: string) => allows(p.pub?.allow, s) && !allows(p.pub?.deny, s), sub };
      };
      const cli = may({ space: SPACE, who: localPrincipal("cotal_cli"), profile: "cli" });
      expect(cli.pub(chunk(instance))).toBe(true);
      const manager = may({ space: SPACE, who: localPrincipal(instance), profile: "manager" });
      const leaf = may({ space: SPACE, who: localPrincipal(`${instance}_leaf`), profile: "leaf" });
      for (const own of [manager, leaf]) {
        expect(own.sub(chunk(instance))).toBe(true);
        expect(own.pub(read(instance))).toBe(true);
        expect(own.sub(chunk(other))).toBe(false);
        expect(own.pub(read(other))).toBe(false);
        expect(own.pub(chunk(instance))).toBe(false);
      }
      for (const profile of ["agent", "reader", "observer", "admin"] as const) {
        const p = may({ space: SPACE, who: localPrincipal(instance), profile, allowSubscribe: ["general"], allowPublish: ["general"] });
        expect(p.sub(chunk(instance)), profile).toBe(false);
        expect(p.pub(chunk(instance)), profile).toBe(false);
        expect(p.pub(read(instance)), profile).toBe(false);
      }
    }
  });
});

describe("names the permissions are built from", () => {
  test("a leaf credential serves the host named before _leaf; a bare _leaf or another name serves none", () => {
    expect(leafHostManager(localPrincipal("hostb_leaf"))).toEqual(localPrincipal("hostb"));
    expect(leafHostManager(localPrincipal("_leaf"))).toBeUndefined();
    expect(leafHostManager(localPrincipal("hostb"))).toBeUndefined();
    expect(leafHostManager({ owner: "acme", actor: "x_leaf" })).toEqual({ owner: "acme", actor: "x" });
  });

  test("an identity's reply inboxes start with its own prefix", () => {
    expect(inboxPrefix(localPrincipal("ann"))).toBe("_INBOX.local.ann");
  });
});
