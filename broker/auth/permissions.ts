import type { Permissions } from "@nats-io/jwt";
import {
  assertChannel,
  chatSubject,
  durables,
  filters,
  names,
  type Principal,
} from "../../schemas/index.js";

/** Credential profiles (DESIGN §13). */
export const PROFILES = ["agent", "observer", "admin", "mesh", "cli", "manager"] as const;
export type Profile = (typeof PROFILES)[number];

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
  return `_INBOX.${who.owner}.${who.actor}`;
}

/** The channel an agent publishes its activity events on (DESIGN §11). */
export function eventsChannel(who: Principal): string {
  return `events.${who.owner}.${who.actor}`;
}

/** Subjects to bind (info, pull, ack) one durable consumer. */
function bindDurable(stream: string, durable: string): string[] {
  return [`$JS.API.CONSUMER.INFO.${stream}.${durable}`, `$JS.API.CONSUMER.MSG.NEXT.${stream}.${durable}`, `$JS.ACK.${stream}.${durable}.>`];
}

/** Read-only control calls every identity may make to the mesh service, as itself. */
function meshReads(space: string, who: Principal): string[] {
  return ["roster", "history", "channels", "ping"].map((c) => `cotal.${space}.ep.mesh.one.${c}.${who.owner}.${who.actor}`);
}

/**
 * Exact publish/subscribe permissions of a profile. The broker enforces these: the sender
 * tokens of every subject an agent may publish on are its own.
 */
export function permissionsFor(spec: IdentitySpec): Partial<Permissions> {
  const { space, who } = spec;
  const me = `${who.owner}.${who.actor}`;
  const inbox = `${inboxPrefix(who)}.>`;
  const presenceAll = `$KV.${names.presenceBucket(space)}.>`;
  const kvGet = (bucket: string) => `$JS.API.STREAM.MSG.GET.KV_${bucket}`;
  const cotal = `cotal.${space}`;
  switch (spec.profile) {
    case "agent": {
      const subscribe = [...new Set(spec.allowSubscribe ?? [])].map(assertChannel);
      const publish = [...new Set([...(spec.allowPublish ?? []), eventsChannel(who)])].map(assertChannel);
      const pub = [
        ...publish.map((ch) => chatSubject(space, who, ch)),
        `${cotal}.inst.*.*.${me}`,
        `${cotal}.svc.*.${me}`,
        `${cotal}.ep.mesh.one.register.${me}`,
        `${cotal}.ep.mesh.one.join.${me}`,
        `${cotal}.ep.mesh.one.leave.${me}`,
        ...meshReads(space, who),
        `$KV.${names.presenceBucket(space)}.${me}`,
        kvGet(names.channelsBucket(space)),
        kvGet(names.membersBucket(space)),
        ...bindDurable(names.dmStream(space), durables.dm(who)),
        ...(spec.role ? bindDurable(names.taskStream(space), durables.anycast(spec.role)) : []),
        ...subscribe.flatMap((ch) => bindDurable(names.chatStream(space), durables.channel(who, ch))),
      ];
      const sub = [inbox, presenceAll, ...subscribe.map((ch) => filters.channel(space, ch))];
      return { pub: { allow: pub }, sub: { allow: sub } };
    }
    case "observer":
      return {
        pub: { allow: [...meshReads(space, who), kvGet(names.channelsBucket(space))] },
        sub: { allow: [inbox, presenceAll, filters.kind(space, "chat")] },
      };
    case "admin":
      return {
        pub: { allow: [...meshReads(space, who), kvGet(names.channelsBucket(space)), kvGet(names.membersBucket(space))] },
        sub: { allow: [inbox, presenceAll, `${cotal}.>`] },
      };
    case "mesh":
      // The mesh service provisions, creates durables, serves the control rail and mints.
      return {
        pub: { allow: ["$JS.API.>", "$KV.>", `${cotal}.>`, "_INBOX.>"] },
        sub: { allow: [`${cotal}.ep.mesh.>`, "_INBOX.>", "$KV.>"] },
      };
    case "cli":
      // The operator's own tool on the mesh host: acts for people (`--as`), reads and manages.
      return {
        pub: { allow: ["$JS.API.>", "$KV.>", `${cotal}.>`, "$JS.ACK.>"] },
        sub: { allow: ["_INBOX.>", `${cotal}.>`, "$KV.>"] },
      };
    case "manager":
      return {
        pub: {
          allow: [
            `${cotal}.seat.>`,
            `${cotal}.ep.mesh.one.*.${me}`,
            `$KV.${names.managersBucket(space)}.>`,
            "$JS.API.STREAM.INFO.*",
            `$JS.API.STREAM.MSG.GET.${names.seatsStream(space)}`,
            "$JS.API.OBJ.>",
          ],
        },
        sub: { allow: [inbox, `${cotal}.ep.manager.>`, presenceAll] },
      };
  }
}
