import { describe, expect, test } from "vitest";
import { permissionsFor, type IdentitySpec } from "../../broker/internal.js";
import {
  anycastSubject,
  chatSubject,
  controlSubject,
  dmSubject,
  durables,
  JS_API,
  localPrincipal,
  names,
  patterns,
  subjectMatches,
  type Principal,
} from "../../schemas/index.js";

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
      chatSubject(SPACE, who, `events.${who.owner}.${who.actor}`),
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
});
