import type { Permissions } from "@nats-io/jwt";
import {
  assertChannel,
  BEAT_TOKEN,
  beatFilter,
  beatSubject,
  durables,
  eventPlaneOf,
  ANY_INSTANCE,
  approveAs,
  approveInbox,
  JS_API,
  names,
  OPERATOR_PRINCIPAL,
  patterns,
  ROOT,
  type Principal,
  type Profile,
  XFER_TOKEN,
  xferFilter,
} from "../../schemas/index.js";

/** Credential profiles (docs/security.md): defined with the control commands, whose `mint` names them. */
export { PROFILES, type Profile } from "../../schemas/index.js";

/** Principals of Cotal's own services (names starting `cotal_` are reserved). */
export const SERVICE_PRINCIPALS = {
  mesh: { owner: "local", actor: "cotal_mesh" },
  cli: OPERATOR_PRINCIPAL,
} as const satisfies Record<string, Principal>;

/** A leaf credential is named `<host>_leaf`: the host whose manager is `<host>`. */
export const LEAF_SUFFIX = "_leaf";

/** The manager of the host a leaf credential serves (`local.hostb_leaf` → `local.hostb`); undefined for another name. */
export function leafHostManager(leaf: Principal): Principal | undefined {
  if (!leaf.actor.endsWith(LEAF_SUFFIX) || leaf.actor.length <= LEAF_SUFFIX.length) return undefined;
  return { owner: leaf.owner, actor: leaf.actor.slice(0, -LEAF_SUFFIX.length) };
}

/** What a credential is minted for. */
export interface IdentitySpec {
  space: string;
  who: Principal;
  profile: Profile;
  /** Channels this identity may read (agent and reader profiles). */
  allowSubscribe?: string[];
  /** Channels this identity may post on (agent profile). */
  allowPublish?: string[];
  /** The role whose anycast queue it may consume (agent profile). */
  role?: string;
  /**
   * It runs a seat, so it may publish its own event plane (agent profile; docs/events.md). Managers
   * mint every seat's credential with it (false for a `--no-events` seat); unset, a credential
   * that may post (any `allowPublish`) gets it and a scoped reader (none) does not.
   */
  events?: boolean;
  /**
   * Personas it may spawn helpers of (agent profile; docs/manager.md, Helpers): with any, it may
   * call the manager rail's SPAWN_CALLS as itself, on any manager. Which personas, how many and how
   * wide is the manager's to check, from the identity record (the `grant` command).
   */
  allowSpawn?: string[];
  /** How many helpers it may hold at once (kept in its identity record; not a permission). */
  spawnLimit?: number;
  /** A person that may steer seats: the manager rail's STEER_CALLS as itself (person profile). */
  steer?: boolean;
}

/** The manager commands the steer right adds to a person, as itself on any instance (docs/security.md, People). */
export const STEER_CALLS = ["spawn", "stop", "personas"] as const;

/** The manager commands the spawn right adds, as itself on any instance (docs/security.md, Profiles). */
export const SPAWN_CALLS = ["spawn", "despawn", "personas", "handover"] as const;

/** The per-identity reply-inbox prefix: nobody may subscribe to another's replies. */
export function inboxPrefix(who: Principal): string {
  return patterns.inbox(who).slice(0, -2);
}

const MESH = "mesh";
const ARTIFACT = "artifact";

/** The mesh service's reads every identity may call as itself (meshReads), by command name. */
export const MESH_READ_COMMANDS = ["roster", "history", "channels", "lookup", "whoami", "ping"] as const;
/** The artifact service's read. */
export const ARTIFACT_READ_COMMANDS = ["artifact-get"] as const;
/** A reader's own durable channel memberships: created (within its scope) and ended. */
export const READER_MEMBERSHIP_CALLS = ["join", "leave"] as const;

/** Read-only control calls every identity may make to the mesh service, as itself. */
function meshReads(space: string, who: Principal): string[] {
  return [
    ...MESH_READ_COMMANDS.map((c) => patterns.callAs(space, MESH, c, who)),
    ...ARTIFACT_READ_COMMANDS.map((c) => patterns.callAs(space, ARTIFACT, c, who)),
  ];
}

/**
 * Every beat subject of a space. Beats are for the mesh service alone (that is what keeps
 * presence O(n)): profiles whose subscribe rights cover the whole space are denied them.
 */
function allBeats(space: string): string {
  return `${ROOT}.${space}.${BEAT_TOKEN}.>`;
}

/** Every transcript transfer of a space: for the operator (who sends) and each instance's own manager alone. */
function allTransfers(space: string): string {
  return `${ROOT}.${space}.${XFER_TOKEN}.>`;
}

/**
 * Exact publish/subscribe permissions of a profile, built only from the subject grammar
 * (schemas/subject-patterns.ts). The broker enforces these: the sender tokens of every subject
 * an agent may publish on are its own. Every profile but `mesh` lives in the space's clients
 * account, which reaches streams only through the imports of space-accounts.ts.
 */
export function permissionsFor(spec: IdentitySpec): Partial<Permissions> {
  const { space, who } = spec;
  const inbox = patterns.inbox(who);
  const presenceAll = patterns.presenceAll(space);
  switch (spec.profile) {
    case "agent": {
      const subscribe = [...new Set(spec.allowSubscribe ?? [])].map(assertChannel);
      // Event planes are not channels one posts on: a plane's name grants nothing here.
      const publish = [...new Set(spec.allowPublish ?? [])].map(assertChannel).filter((ch) => !eventPlaneOf(ch));
      // Its own event plane only if it runs a seat (a scoped reader once wrote frames
      // until CHAT_ was full). The plane has its own stream, bounded per actor (EVENTS_, provision.ts).
      const events = spec.events ?? publish.length > 0;
      const pub = [
        ...publish.map((ch) => patterns.postAs(space, who, ch)),
        ...(events ? [patterns.eventsAs(space, who)] : []),
        patterns.dmFrom(space, who),
        patterns.anycastFrom(space, who),
        // Answers to a seat's permission asks, as itself (a spawner answers its helpers' asks; the
        // seat checks the right: docs/security.md, The approve right).
        approveAs(space, who),
        // Any command of the mesh and artifact endpoints, as itself, in two subjects: a user JWT is
        // sent whole on connect and the server refuses a CONNECT line over 4 KiB. The service
        // refuses the operator's own commands (mint, revoke) by the caller's principal.
        patterns.anyCallAs(space, MESH, who),
        patterns.anyCallAs(space, ARTIFACT, who),
        // One-shot runs on any manager (docs/runs.md), as itself: the manager's budget gates
        // bound what they spend, and it refuses a cwd from anyone but the operator.
        patterns.callAs(space, "manager", "run", who),
        // The spawn right: start, retire, list and hand over its helpers, on any manager.
        ...(spec.allowSpawn?.length ? SPAWN_CALLS.map((c) => patterns.callAsAnyTarget(space, "manager", c, who)) : []),
        patterns.presenceKey(space, who),
        // Its own liveness beat, which only the mesh service may read.
        beatSubject(space, who),
        patterns.bucketGet(names.channelsBucket(space)),
        ...patterns.bindDurable(names.dmStream(space), durables.dm(who)),
        ...(spec.role ? patterns.bindDurable(names.taskStream(space), durables.anycast(spec.role)) : []),
        // Durable memberships of its channels (an event plane is read live and by history: none).
        ...subscribe.filter((ch) => !eventPlaneOf(ch)).flatMap((ch) => patterns.bindDurable(names.chatStream(space), durables.channel(who, ch))),
      ];
      // Answers to its own permission asks, from anyone (the seat checks who may answer).
      const sub = [inbox, presenceAll, approveInbox(space, who), ...subscribe.map((ch) => patterns.channelPosts(space, ch))];
      // It replies once to each answer it receives, on the answerer's reply subject, and on no other inbox.
      return { pub: { allow: pub }, sub: { allow: sub }, resp: { max: 1, ttl: 0 } };
    }
    case "reader": {
      // A scoped reader: it publishes nothing that is stored or reaches anyone
      // (no posts, no event plane, no DMs or anycasts, no presence key, no beat, no seat log). It
      // reads its scope live and asks the mesh service's reads as itself; the service refuses it
      // every other command (reader-calls.ts) and history outside the scope (`read-denied`).
      const scope = [...new Set(spec.allowSubscribe ?? [])].map(assertChannel);
      // Channels (not event planes) may be read durably: a membership the mesh service creates
      // on `join` (within the scope), which it binds, pulls and acks; `leave` ends it. A membership
      // is a consumer on CHAT_ (limits retention): it holds no post and reaches no one.
      const channels = scope.filter((ch) => !eventPlaneOf(ch));
      return {
        pub: {
          allow: [
            ...meshReads(space, who),
            ...(channels.length ? READER_MEMBERSHIP_CALLS.map((c) => patterns.callAs(space, MESH, c, who)) : []),
            patterns.bucketGet(names.channelsBucket(space)),
            ...channels.flatMap((ch) => patterns.bindDurable(names.chatStream(space), durables.channel(who, ch))),
          ],
        },
        sub: { allow: [inbox, presenceAll, ...scope.map((ch) => patterns.channelPosts(space, ch))] },
      };
    }
    case "observer":
      return {
        pub: {
          allow: [
            ...meshReads(space, who),
            patterns.bucketGet(names.channelsBucket(space)),
            // `cotal ps` (docs/manager.md): the managers' heartbeats, read by MSG.GET (changes
            // nothing), and each manager's read-only `ps` asked as itself.
            patterns.bucketGet(names.managersBucket(space)),
            // every instance's `ps`
            patterns.callAsAnyTarget(space, "manager", "ps", who),
          ],
        },
        sub: { allow: [inbox, presenceAll, patterns.allPosts(space), patterns.allEvents(space)] },
      };
    case "person":
      // A person (docs/security.md, Profiles): speaks as itself everywhere and reads what an
      // observer reads, plus its own DMs. Every subject it publishes names it as the sender, so it
      // can speak for no one else. It holds no channel memberships (a channel is read live and by
      // history: a durable per channel it may read would be unbounded), no role and no event
      // plane; approving and steering seats come as rights of their own.
      return {
        pub: {
          allow: [
            patterns.postAsAny(space, who),
            patterns.dmFrom(space, who),
            patterns.anycastFrom(space, who),
            // Answers to seats' permission asks, as itself; each seat checks the approve right.
            approveAs(space, who),
            ...meshReads(space, who),
            // Its DM inbox, created by the mesh service (`register`), and attached files (artifacts).
            patterns.callAs(space, MESH, "register", who),
            patterns.anyCallAs(space, ARTIFACT, who),
            patterns.presenceKey(space, who),
            beatSubject(space, who),
            patterns.bucketGet(names.channelsBucket(space)),
            ...patterns.bindDurable(names.dmStream(space), durables.dm(who)),
            // `cotal ps`, as an observer: the managers' heartbeats and each manager's read-only `ps`.
            patterns.bucketGet(names.managersBucket(space)),
            patterns.callAsAnyTarget(space, "manager", "ps", who),
            // The steer right: spawn personas and team seats, stop them, list personas, on any manager.
            ...(spec.steer ? STEER_CALLS.map((c) => patterns.callAsAnyTarget(space, "manager", c, who)) : []),
          ],
          // A channel named like an event plane is a plane, written by its own seat only.
          deny: [patterns.postAsOnPlaneNames(space, who)],
        },
        sub: { allow: [inbox, presenceAll, patterns.allPosts(space), patterns.allEvents(space)] },
      };
    case "admin":
      return {
        pub: {
          allow: [
            ...meshReads(space, who),
            patterns.bucketGet(names.channelsBucket(space)),
            // Read-only JetStream reads for `cotal web` (it reads as admin): how many DMs wait for
            // whom and since when (DM_ is a work queue: stored means not yet acked), the seat log,
            // the managers' heartbeats, and which channels hold posts (the feed's history). INFO
            // and MSG.GET change nothing.
            `${JS_API}.STREAM.INFO.${names.dmStream(space)}`,
            `${JS_API}.STREAM.INFO.${names.chatStream(space)}`,
            `${JS_API}.STREAM.MSG.GET.${names.dmStream(space)}`,
            `${JS_API}.STREAM.MSG.GET.${names.seatsStream(space)}`,
            `${JS_API}.STREAM.MSG.GET.KV_${names.managersBucket(space)}`,
          ],
        },
        // Not beats, and not the transcripts carried to the managers (only each one's own reads them).
        sub: { allow: [inbox, presenceAll, patterns.space(space)], deny: [allBeats(space), allTransfers(space)] },
      };
    case "mesh":
      // The mesh service, alone in the data account: provisions, creates durables, mints, and
      // serves the control rail (it answers only on the reply a service import invents).
      return {
        // `$O.>`: the artifacts Object Store, which only it reads and writes.
        pub: { allow: ["$JS.API.>", patterns.space(space), "_INBOX.>", "_R_.>", "$KV.>", "$O.>"] },
        // `xfer`: transcript carry into the per-instance buckets (operator only, checked by the service).
        // Beats: it alone judges liveness (broker/liveness.ts).
        sub: { allow: [patterns.callsTo(space, MESH), patterns.callsTo(space, ARTIFACT), patterns.callsTo(space, "xfer"), "_INBOX.>", beatFilter(space)] },
      };
    case "cli":
      // The operator's own tool on the mesh host, in the clients account: acts for people
      // (`cotal send --as`), reads everything and configures channels. It can reach no more of
      // JetStream than the clients account imports (read-only API, binds, acks).
      return {
        // It also runs the mesh host's manager: heartbeats in the managers bucket.
        pub: {
          allow: [
            patterns.space(space),
            `${JS_API}.>`,
            "$JS.ACK.>",
            presenceAll,
            patterns.bucketKeys(names.channelsBucket(space)),
            patterns.bucketKeys(names.managersBucket(space)),
          ],
        },
        sub: { allow: ["_INBOX.>", patterns.space(space), presenceAll], deny: [allBeats(space)] },
        // The mesh host's manager runs with it: it answers the requests it receives, once each,
        // on the requester's reply subject, and may publish on no other inbox.
        resp: { max: 1, ttl: 0 },
      };
    case "manager":
      // A manager (its credential is named like its instance): it appends to the seat log as
      // itself, heartbeats under its own key, serves the manager rail for its own instance and the
      // `one` queue group (answering each request once), watches presence, and mints/revokes its
      // seats' agent credentials through the mesh service (which refuses any other profile). Its
      // own subjects only: nobody else writes its records or heartbeat, or takes its requests.
      return {
        pub: {
          allow: [
            patterns.seatLogAs(space, who),
            // A seat's opening prompt, as a DM from the manager to the seat it starts: what another
            // principal chose reaches the model as mail, never as keystrokes (docs/security.md).
            patterns.dmFrom(space, who),
            // `grant`: what a spawner was minted with, to judge its helpers (docs/manager.md, Helpers).
            ...["register", "mint", "revoke", "grant"].map((c) => patterns.callAs(space, MESH, c, who)),
            // Transcript carry: read what was carried to it from its own transfer stream (the chunks it
            // did not see pass), and remove it once staged (the service checks the instance is its name).
            patterns.callAs(space, "xfer", "xfer-remove", who),
            `${JS_API}.STREAM.MSG.GET.${names.xferStream(space, who.actor)}`,
            ...meshReads(space, who),
            patterns.bucketKey(names.managersBucket(space), who.actor),
            `${JS_API}.STREAM.MSG.GET.${names.seatsStream(space)}`,
            `${JS_API}.STREAM.INFO.KV_${names.managersBucket(space)}`,
          ],
        },
        // `one`: any manager may take a request that leaves the choice to the managers (docs/manager.md).
        // Its own transfers as their chunks pass (transcript carry).
        sub: {
          allow: [
            inbox,
            patterns.callsToTarget(space, "manager", who.actor),
            patterns.callsToTarget(space, "manager", ANY_INSTANCE),
            presenceAll,
            xferFilter(space, who.actor),
          ],
        },
        resp: { max: 1, ttl: 0 },
      };
    case "leaf":
      // A leaf credential's rights are those of the identities on its host (leafPermissions); it
      // is minted with none of its own and gets them from its scoped signing key (leaf-scope.ts).
      return leafPermissions(space, who, []);
  }
}

/** Subjects of two permission lists together, once each, in a stable order (so a scope compares by value). */
function union(...lists: Array<string[] | undefined>): string[] {
  return [...new Set(lists.flatMap((l) => l ?? []))].sort();
}

/**
 * What a leaf-node host may do through its connection to the hub (docs/security.md, "Leaf-node
 * hosts"): exactly what the identities that run there may — its manager (`<host>` for
 * `<host>_leaf`) and `seats`: the agents its manager minted through that leaf, and the agents,
 * readers and observers the operator minted for it (`cotal mint --on`), none revoked or expired —
 * and no more, whoever controls that host's nats-server. The hub applies it to everything the
 * connection carries; every identity on the host is checked again there, by its own credential.
 * Besides their union: answers to the requests its manager serves (any inbox: the requester's).
 * `seats` are agents, readers and observers (leaf-scope.ts decides which).
 */
export function leafPermissions(space: string, leaf: Principal, seats: IdentitySpec[]): Partial<Permissions> {
  const host = leafHostManager(leaf);
  const each = [...(host ? [permissionsFor({ space, who: host, profile: "manager" })] : []), ...seats.map((s) => permissionsFor({ ...s, space }))];
  // Each identity's rights are its own subjects only, so the union holds nothing as Cotal's
  // services (the profile table tries it) and needs no deny.
  return {
    pub: { allow: union(["_INBOX.>"], ...each.map((p) => p.pub?.allow)) },
    sub: { allow: union(...each.map((p) => p.sub?.allow)) },
  };
}
