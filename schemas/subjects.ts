import { assertChannel, assertToken, isToken } from "./tokens.js";
import { CotalError } from "./errors.js";
import { eventPlaneOf, eventsChannelOf } from "./events.js";
import type { Principal } from "./principal.js";

/**
 * Subject grammar (docs/SPEC.md §2). The sender is always in the subject, where the broker's
 * publish permissions pin it; receivers take sender and kind from the subject, not the payload.
 *
 * | kind    | subject                                                            |
 * |---------|--------------------------------------------------------------------|
 * | chat    | cotal.<space>.chat.<owner>.<actor>.<channel…>                      |
 * | inst    | cotal.<space>.inst.<toOwner>.<toActor>.<fromOwner>.<fromActor>     |
 * | svc     | cotal.<space>.svc.<role>.<owner>.<actor>                           |
 * | ep      | cotal.<space>.ep.<endpoint>.<target>.<command>.<owner>.<actor>     |
 * | seat    | cotal.<space>.seat.<owner>.<actor>.<writerOwner>.<writerActor>     |
 * | events  | cotal.<space>.events.<owner>.<actor>                               |
 */
export const ROOT = "cotal";

/** Subject kinds of the wire, as the token after the space. */
export const SUBJECT_KINDS = ["chat", "inst", "svc", "ep", "seat", "events"] as const;
export type SubjectKind = (typeof SUBJECT_KINDS)[number];

function spaceRoot(space: string): string {
  return `${ROOT}.${assertToken("space", "space", space)}`;
}

function principalTokens(p: Principal): string {
  return `${assertToken("principal", "owner", p.owner)}.${assertToken("principal", "actor name", p.actor)}`;
}

/** A channel post by `from` on `channel` (dotted, may nest). */
export function chatSubject(space: string, from: Principal, channel: string): string {
  return `${spaceRoot(space)}.chat.${principalTokens(from)}.${assertChannel(channel)}`;
}

/** A DM to `to` from `from`: exactly 7 tokens. */
export function dmSubject(space: string, to: Principal, from: Principal): string {
  return `${spaceRoot(space)}.inst.${principalTokens(to)}.${principalTokens(from)}`;
}

/** An anycast to any one holder of `role`, from `from`. */
export function anycastSubject(space: string, role: string, from: Principal): string {
  return `${spaceRoot(space)}.svc.${assertToken("name", "role", role)}.${principalTokens(from)}`;
}

/** Control target: `one` (any instance, queue group) or a specific instance id. */
export const ANY_INSTANCE = "one";

/** A control call to `endpoint` (`target` = `one` or an instance id) by `caller`. */
export function controlSubject(space: string, endpoint: string, target: string, command: string, caller: Principal): string {
  return `${spaceRoot(space)}.ep.${assertToken("name", "endpoint", endpoint)}.${assertToken("name", "target", target)}.${assertToken("name", "command", command)}.${principalTokens(caller)}`;
}

/**
 * One writer's records in the seat log of `seat` (the manager's event-sourced history): the
 * writer (a manager's principal) is in the subject, where the broker pins it, so a reader knows
 * which manager wrote each record and counts only the owner's (docs/SPEC.md §2).
 */
export function seatSubject(space: string, seat: Principal, writer: Principal): string {
  return `${spaceRoot(space)}.seat.${principalTokens(seat)}.${principalTokens(writer)}`;
}

/**
 * A seat's event plane (docs/events.md): its own subject kind, stored in `EVENTS_<space>` with a
 * rolling window per actor. The writer is the actor in the subject, where the broker pins it.
 */
export function eventsSubject(space: string, who: Principal): string {
  return `${spaceRoot(space)}.events.${principalTokens(who)}`;
}

/** A post on an event plane by anyone but its owner: nobody else writes a seat's plane. */
export class NotOwnPlaneError extends CotalError {
  constructor(channel: string, from: Principal) {
    super("not-own-plane", `${channel} is an event plane: only its own seat writes it, not ${from.owner}.${from.actor}.`, {
      remedy: "Post on a channel; an event plane is written by the connector of the seat it names.",
    });
  }
}

/**
 * The subject a post by `from` on `channel` goes to: a channel's chat subject, or, for the name of
 * `from`'s own event plane (`events.<owner>.<actor>`), the plane's subject. Another's plane is
 * refused (NotOwnPlaneError).
 */
export function postSubject(space: string, from: Principal, channel: string): string {
  const plane = eventPlaneOf(channel);
  if (!plane) return chatSubject(space, from, channel);
  if (plane.owner !== from.owner || plane.actor !== from.actor) throw new NotOwnPlaneError(channel, from);
  return eventsSubject(space, from);
}

/** Filters (wildcards) used by streams, consumers and subscriptions. */
export const filters = {
  /** Every subject of a kind in a space, e.g. the CHAT_ stream's subjects. */
  kind: (space: string, kind: SubjectKind) => `${spaceRoot(space)}.${kind}.>`,
  /**
   * Posts on one channel from anyone (exact channel; nested channels are separate). An event plane's
   * name (`events.<owner>.<actor>`) filters its plane's own subject.
   */
  channel: (space: string, channel: string) => {
    const plane = eventPlaneOf(assertChannel(channel));
    return plane ? eventsSubject(space, plane) : `${spaceRoot(space)}.chat.*.*.${channel}`;
  },
  /** Every DM addressed to `to`. */
  dmInbox: (space: string, to: Principal) => `${spaceRoot(space)}.inst.${principalTokens(to)}.>`,
  /** Every anycast to `role`. */
  anycast: (space: string, role: string) => `${spaceRoot(space)}.svc.${assertToken("name", "role", role)}.>`,
  /** Every call to one endpoint's command (any caller). */
  control: (space: string, endpoint: string, target: string, command: string) =>
    `${spaceRoot(space)}.ep.${assertToken("name", "endpoint", endpoint)}.${assertToken("name", "target", target)}.${assertToken("name", "command", command)}.*.*`,
  /** One seat's log, by every writer. */
  seat: (space: string, seat: Principal) => `${spaceRoot(space)}.seat.${principalTokens(seat)}.*.*`,
  /** The logs of every seat of one owner (e.g. the manager's run records, owner `cotal_run`), by every writer. */
  seatsOf: (space: string, owner: string) => `${spaceRoot(space)}.seat.${assertToken("principal", "owner", owner)}.*.*.*`,
};

/** A subject the parser understood, with its sender taken from the subject. */
export type ParsedSubject =
  | { kind: "chat"; space: string; from: Principal; channel: string }
  | { kind: "inst"; space: string; to: Principal; from: Principal }
  | { kind: "svc"; space: string; role: string; from: Principal }
  | { kind: "ep"; space: string; endpoint: string; target: string; command: string; from: Principal }
  | { kind: "seat"; space: string; seat: Principal; from: Principal }
  /** An event-plane frame; `channel` is the plane's name, `events.<owner>.<actor>`. */
  | { kind: "events"; space: string; from: Principal; channel: string };

/** Why a subject was dropped: it has no trustworthy sender. */
export type SubjectRejection = {
  kind: "rejected";
  reason: "malformed" | "invalid-token" | "unknown-kind";
  detail: string;
};

function owner(tokens: string[], at: number): Principal | string {
  const o = tokens[at];
  const a = tokens[at + 1];
  if (o === undefined || a === undefined) return "missing principal";
  if (!isToken("principal", o)) return `owner ${JSON.stringify(o)} is not a valid owner`;
  if (!isToken("principal", a)) return `actor ${JSON.stringify(a)} is not a valid actor`;
  return { owner: o, actor: a };
}

/**
 * Parse a subject into its kind, space and sender. Never throws: anything that is not a
 * well-formed subject of a known kind comes back as a rejection, which receivers drop.
 */
export function parseSubject(subject: string): ParsedSubject | SubjectRejection {
  const reject = (reason: SubjectRejection["reason"], detail: string): SubjectRejection => ({
    kind: "rejected",
    reason,
    detail: `${detail} in ${JSON.stringify(subject)}`,
  });
  const t = subject.split(".");
  if (t.length < 3 || t[0] !== ROOT) return reject("malformed", "not a cotal subject");
  const space = t[1]!;
  if (!isToken("space", space)) return reject("invalid-token", `space ${JSON.stringify(space)} is invalid`);
  const kind = t[2]!;
  const check = (p: Principal | string): p is Principal => typeof p !== "string";
  switch (kind) {
    case "chat": {
      if (t.length < 6) return reject("malformed", "chat subject without a channel");
      const from = owner(t, 3);
      if (!check(from)) return reject("invalid-token", from);
      const channel = t.slice(5).join(".");
      if (!t.slice(5).every((s) => isToken("name", s))) return reject("invalid-token", `channel ${JSON.stringify(channel)} is invalid`);
      return { kind, space, from, channel };
    }
    case "inst": {
      if (t.length !== 7) return reject("malformed", `DM subject must have 7 tokens, has ${t.length}`);
      const to = owner(t, 3);
      if (!check(to)) return reject("invalid-token", to);
      const from = owner(t, 5);
      if (!check(from)) return reject("invalid-token", from);
      return { kind, space, to, from };
    }
    case "svc": {
      if (t.length !== 6) return reject("malformed", `anycast subject must have 6 tokens, has ${t.length}`);
      const role = t[3]!;
      if (!isToken("name", role)) return reject("invalid-token", `role ${JSON.stringify(role)} is invalid`);
      const from = owner(t, 4);
      if (!check(from)) return reject("invalid-token", from);
      return { kind, space, role, from };
    }
    case "ep": {
      if (t.length !== 8) return reject("malformed", `control subject must have 8 tokens, has ${t.length}`);
      const [endpoint, target, command] = [t[3]!, t[4]!, t[5]!];
      for (const [what, v] of [
        ["endpoint", endpoint],
        ["target", target],
        ["command", command],
      ] as const) {
        if (!isToken("name", v)) return reject("invalid-token", `${what} ${JSON.stringify(v)} is invalid`);
      }
      const from = owner(t, 6);
      if (!check(from)) return reject("invalid-token", from);
      return { kind, space, endpoint, target, command, from };
    }
    case "seat": {
      if (t.length !== 7) return reject("malformed", `seat subject must have 7 tokens, has ${t.length}`);
      const seat = owner(t, 3);
      if (!check(seat)) return reject("invalid-token", seat);
      const from = owner(t, 5);
      if (!check(from)) return reject("invalid-token", from);
      return { kind, space, seat, from };
    }
    case "events": {
      if (t.length !== 5) return reject("malformed", `event-plane subject must have 5 tokens, has ${t.length}`);
      const from = owner(t, 3);
      if (!check(from)) return reject("invalid-token", from);
      return { kind, space, from, channel: eventsChannelOf(from) };
    }
    default:
      return reject("unknown-kind", `unknown or retired kind ${JSON.stringify(kind)} (no sender)`);
  }
}

/** Stream and bucket names of a space (docs/SPEC.md §4). */
export const names = {
  chatStream: (space: string) => `CHAT_${assertToken("space", "space", space)}`,
  dmStream: (space: string) => `DM_${assertToken("space", "space", space)}`,
  taskStream: (space: string) => `TASK_${assertToken("space", "space", space)}`,
  seatsStream: (space: string) => `SEATS_${assertToken("space", "space", space)}`,
  eventsStream: (space: string) => `EVENTS_${assertToken("space", "space", space)}`,
  /** The stream a channel's posts live in: `EVENTS_` for an event plane's name, else `CHAT_`. */
  streamOfChannel: (space: string, channel: string): string => (eventPlaneOf(channel) ? names.eventsStream(space) : names.chatStream(space)),
  presenceBucket: (space: string) => `cotal_presence_${assertToken("space", "space", space)}`,
  channelsBucket: (space: string) => `cotal_channels_${assertToken("space", "space", space)}`,
  membersBucket: (space: string) => `cotal_members_${assertToken("space", "space", space)}`,
  managersBucket: (space: string) => `cotal_managers_${assertToken("space", "space", space)}`,
  artifactsBucket: (space: string) => `cotal_artifacts_${assertToken("space", "space", space)}`,
  /** Transcripts carried to one manager instance (docs/manager.md "Transcript carry"). */
  xferStream: (space: string, instance: string) => `XFER_${assertToken("space", "space", space)}_${assertToken("name", "instance", instance)}`,
};
