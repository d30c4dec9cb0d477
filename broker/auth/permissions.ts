import type { Permissions } from "@nats-io/jwt";
import { clientServices } from "./space-accounts.js";
import {
  assertChannel,
  BEAT_TOKEN,
  beatFilter,
  beatSubject,
  durables,
  eventsChannelOf,
  filters,
  JS_API,
  names,
  patterns,
  ROOT,
  type Principal,
  type Profile,
} from "../../schemas/index.js";

/** Credential profiles (docs/security.md): defined with the control commands, whose `mint` names them. */
export { PROFILES, type Profile } from "../../schemas/index.js";

/** Principals of Cotal's own services (names starting `cotal_` are reserved). */
export const SERVICE_PRINCIPALS = {
  mesh: { owner: "local", actor: "cotal_mesh" },
  cli: { owner: "local", actor: "cotal_cli" },
} as const satisfies Record<string, Principal>;

/** What a credential is minted for. */
export interface IdentitySpec {
  space: string;
  who: Principal;
  profile: Profile;
  /** Channels this identity may read (agent profile). */
  allowSubscribe?: string[];
  /** Channels this identity may post on (agent profile). */
  allowPublish?: string[];
  /** The role whose anycast queue it may consume (agent profile). */
  role?: string;
}

/** The per-identity reply-inbox prefix: nobody may subscribe to another's replies. */
export function inboxPrefix(who: Principal): string {
  return patterns.inbox(who).slice(0, -2);
}

/** The channel an agent publishes its activity events on (docs/events.md). */
export function eventsChannel(who: Principal): string {
  return eventsChannelOf(who);
}

/** Read-only control calls every identity may make to the mesh service, as itself. */
function meshReads(space: string, who: Principal): string[] {
  return [
    ...["roster", "history", "channels", "lookup", "whoami", "ping"].map((c) => patterns.callAs(space, MESH, c, who)),
    patterns.callAs(space, ARTIFACT, "artifact-get", who),
  ];
}

const MESH = "mesh";
const ARTIFACT = "artifact";

/**
 * Every beat subject of a space. Beats are for the mesh service alone (that is what keeps
 * presence O(n)): profiles whose subscribe rights cover the whole space are denied them.
 */
function allBeats(space: string): string {
  return `${ROOT}.${space}.${BEAT_TOKEN}.>`;
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
      const publish = [...new Set([...(spec.allowPublish ?? []), eventsChannel(who)])].map(assertChannel);
      const pub = [
        ...publish.map((ch) => patterns.postAs(space, who, ch)),
        patterns.dmFrom(space, who),
        patterns.anycastFrom(space, who),
        // Any command of the mesh and artifact endpoints, as itself, in two subjects: a user JWT is
        // sent whole on connect and the server refuses a CONNECT line over 4 KiB. The service
        // refuses the operator's own commands (mint, revoke) by the caller's principal.
        patterns.anyCallAs(space, MESH, who),
        patterns.anyCallAs(space, ARTIFACT, who),
        // One-shot runs on any manager (docs/runs.md), as itself: the manager's budget gates
        // bound what they spend, and it refuses a cwd from anyone but the operator.
        patterns.callAs(space, "manager", "run", who),
        patterns.presenceKey(space, who),
        // Its own liveness beat, which only the mesh service may read.
        beatSubject(space, who),
        patterns.bucketGet(names.channelsBucket(space)),
        ...patterns.bindDurable(names.dmStream(space), durables.dm(who)),
        ...(spec.role ? patterns.bindDurable(names.taskStream(space), durables.anycast(spec.role)) : []),
        ...subscribe.flatMap((ch) => patterns.bindDurable(names.chatStream(space), durables.channel(who, ch))),
      ];
      const sub = [inbox, presenceAll, ...subscribe.map((ch) => patterns.channelPosts(space, ch))];
      return { pub: { allow: pub }, sub: { allow: sub } };
    }
    case "observer":
      return {
        pub: { allow: [...meshReads(space, who), patterns.bucketGet(names.channelsBucket(space))] },
        sub: { allow: [inbox, presenceAll, patterns.allPosts(space)] },
      };
    case "admin":
      return {
        pub: {
          allow: [
            ...meshReads(space, who),
            patterns.bucketGet(names.channelsBucket(space)),
            // Read-only JetStream reads for `cotal web` (it reads as admin): how many DMs wait for
            // whom and since when (DM_ is a work queue: stored means not yet acked), the seat log,
            // and the managers' heartbeats. INFO and MSG.GET change nothing.
            `${JS_API}.STREAM.INFO.${names.dmStream(space)}`,
            `${JS_API}.STREAM.MSG.GET.${names.dmStream(space)}`,
            `${JS_API}.STREAM.MSG.GET.${names.seatsStream(space)}`,
            `${JS_API}.STREAM.MSG.GET.KV_${names.managersBucket(space)}`,
          ],
        },
        sub: { allow: [inbox, presenceAll, patterns.space(space)], deny: [allBeats(space)] },
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
      // A manager on another host: it keeps the seat log, heartbeats, serves the manager rail
      // (answering each request once), watches presence, and mints/revokes its seats' agent
      // credentials through the mesh service (which refuses any other profile).
      return {
        pub: {
          allow: [
            filters.kind(space, "seat"),
            ...["register", "mint", "revoke"].map((c) => patterns.callAs(space, MESH, c, who)),
            // Transcript carry: read and remove what was carried to it (the service checks the instance is its name).
            ...["xfer-read", "xfer-remove"].map((c) => patterns.callAs(space, "xfer", c, who)),
            ...meshReads(space, who),
            patterns.bucketKeys(names.managersBucket(space)),
            `${JS_API}.STREAM.MSG.GET.${names.seatsStream(space)}`,
            `${JS_API}.STREAM.INFO.KV_${names.managersBucket(space)}`,
          ],
        },
        sub: { allow: [inbox, patterns.callsTo(space, "manager"), presenceAll] },
        resp: { max: 1, ttl: 0 },
      };
    case "leaf":
      // A leaf-node host's nats-server (docs/security.md, "Leaf nodes"): it bridges its own
      // clients account to this one. Every identity on that host still authenticates there with
      // its own credential (same operator and accounts), so the leaf server enforces each one's
      // permissions; this credential bounds what the whole host can reach: the clients account's
      // imports (no JetStream API beyond them), replies on inboxes, and the space's subjects and
      // watched buckets to receive. It can reach no other space and nothing of the data account.
      return {
        pub: { allow: [...clientServices(space).map((s) => s.subject), "_INBOX.>"] },
        // Beats cross to the hub (its agents beat), never back: no one on the host reads them.
        sub: { allow: ["_INBOX.>", patterns.space(space), presenceAll, patterns.bucketKeys(names.managersBucket(space))], deny: [allBeats(space)] },
      };
  }
}
