import { principalId, type Principal } from "./principal.js";
import { chatSubject, controlSubject, eventsSubject, filters, names, ROOT } from "./subjects.js";
import { assertToken } from "./tokens.js";

/**
 * Wildcard patterns over the subject grammar, built from the same builders clients publish
 * with, so what the broker allows cannot drift from what clients send (a property test holds
 * each profile's patterns against the builders). `*` stands for one token, `>` for the rest.
 */
function root(space: string): string {
  return `${ROOT}.${assertToken("space", "space", space)}`;
}

/** The token pair of a principal, validated (refused, never rewritten). */
function who(p: Principal): string {
  return principalId({ owner: assertToken("principal", "owner", p.owner), actor: assertToken("principal", "actor name", p.actor) });
}

/** JetStream's own API prefix, as the account that holds the streams sees it. */
export const JS_API = "$JS.API";

export const patterns = {
  /** Everything of one space. */
  space: (space: string) => `${root(space)}.>`,
  /** `from`'s posts on one channel (exact). */
  postAs: (space: string, from: Principal, channel: string) => chatSubject(space, from, channel),
  /** `from`'s posts on every channel (a person's: docs/security.md, Profiles). */
  postAsAny: (space: string, from: Principal) => `${root(space)}.chat.${who(from)}.>`,
  /** Posts as `from` on channels named like an event plane (`events.<owner>.<actor>`): never a plane, so never allowed. */
  postAsOnPlaneNames: (space: string, from: Principal) => `${root(space)}.chat.${who(from)}.events.*.*`,
  /** DMs from `from` to anyone. */
  dmFrom: (space: string, from: Principal) => `${root(space)}.inst.*.*.${who(from)}`,
  /** Anycasts from `from` to any role. */
  anycastFrom: (space: string, from: Principal) => `${root(space)}.svc.*.${who(from)}`,
  /** One control command on one endpoint's `one` target, called as `caller`. */
  callAs: (space: string, endpoint: string, command: string, caller: Principal) => controlSubject(space, endpoint, "one", command, caller),
  /** One control command on any target of an endpoint (`one` or any instance id), called as `caller`. */
  callAsAnyTarget: (space: string, endpoint: string, command: string, caller: Principal) =>
    `${root(space)}.ep.${assertToken("name", "endpoint", endpoint)}.*.${assertToken("name", "command", command)}.${who(caller)}`,
  /** Any command of one endpoint's `one` target, as `caller`. */
  anyCallAs: (space: string, endpoint: string, caller: Principal) =>
    `${root(space)}.ep.${assertToken("name", "endpoint", endpoint)}.one.*.${caller.owner}.${caller.actor}`,
  /** Every control call to one endpoint (what a service subscribes to). */
  callsTo: (space: string, endpoint: string) => `${root(space)}.ep.${assertToken("name", "endpoint", endpoint)}.>`,
  /** Every control call to one endpoint's `target` (`one`, or an instance id): what one instance serves. */
  callsToTarget: (space: string, endpoint: string, target: string) =>
    `${root(space)}.ep.${assertToken("name", "endpoint", endpoint)}.${assertToken("name", "target", target)}.>`,
  /** The seat-log records `writer` may append: any seat's (or run's) log, with itself as the writer. */
  seatLogAs: (space: string, writer: Principal) => `${root(space)}.seat.*.*.${who(writer)}`,
  /** Posts on every channel. */
  allPosts: (space: string) => filters.kind(space, "chat"),
  /** `who`'s own event plane (docs/events.md): the one plane it may write. */
  eventsAs: (space: string, who: Principal) => eventsSubject(space, who),
  /** Every event plane. */
  allEvents: (space: string) => filters.kind(space, "events"),
  /** Posts on one channel from anyone. */
  channelPosts: (space: string, channel: string) => filters.channel(space, channel),
  /** One principal's presence key, as the KV write subject. */
  presenceKey: (space: string, p: Principal) => `$KV.${names.presenceBucket(space)}.${who(p)}`,
  /** Every presence key. */
  presenceAll: (space: string) => `$KV.${names.presenceBucket(space)}.>`,
  /** Every key of a bucket, as KV write subjects. */
  bucketKeys: (bucket: string) => `$KV.${bucket}.>`,
  /** One key of a bucket, as its KV write subject (a put and a delete both publish there). */
  bucketKey: (bucket: string, key: string) => `$KV.${bucket}.${assertToken("name", "key", key)}`,
  /** Reading one message of a bucket's stream by key. */
  bucketGet: (bucket: string) => `${JS_API}.STREAM.MSG.GET.KV_${bucket}`,
  /** The reply inbox of one identity: nobody may read another's replies (or its pulls). */
  inbox: (p: Principal) => `_INBOX.${who(p)}.>`,
  /** Binding one durable: its info, its pulls and its acks (never create or delete). */
  bindDurable: (stream: string, durable: string) => [
    `${JS_API}.CONSUMER.INFO.${stream}.${durable}`,
    `${JS_API}.CONSUMER.MSG.NEXT.${stream}.${durable}`,
    `$JS.ACK.${stream}.${durable}.>`,
  ],
};

/** Does `subject` match the NATS wildcard `pattern`? */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== "*" && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}
