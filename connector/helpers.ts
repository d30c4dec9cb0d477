// A seat's helpers (docs/connector.md, Helpers): when its credential carries the
// spawn right, it asks a manager to start, retire and hand over helper seats as itself. The manager
// asked is the seat's own (launch material `manager`: helpers run beside their spawner and retire
// with it), else any (`one`) for a seat started by hand; a helper is retired and handed over on the
// manager that runs it, as its spawn answered.
import { readFileSync } from "node:fs";
import type { NatsConnection } from "@nats-io/transport-node";
import type { z } from "zod";
import { controlCaller, credsClaims } from "../broker/index.js";
import { MANAGER_COMMANDS, patterns, principalId, subjectMatches, type Principal, type TableReplyData } from "../schemas/index.js";

const callManager = controlCaller(MANAGER_COMMANDS);

type Commands = typeof MANAGER_COMMANDS;
export type SpawnArgs = z.input<Commands["spawn"]["args"]>;
export type SpawnReply = TableReplyData<Commands, "spawn">;
export type DespawnReply = TableReplyData<Commands, "despawn">;
export type PersonasReply = TableReplyData<Commands, "personas">;
export type HandoverReply = TableReplyData<Commands, "handover">;

/** How long a spawn may take to answer (the manager mints and starts before it replies), ms. */
const SPAWN_TIMEOUT_MS = 30_000;

/**
 * Whether the credential in `credsFile` carries the spawn right: its signed permissions let it call
 * the manager rail's `spawn` as `me` (docs/security.md, Profiles). Read from the file, unverified:
 * the broker is what enforces it; this only decides whether the tools are offered.
 */
export function credsMaySpawn(credsFile: string | undefined, space: string, me: Principal): boolean {
  if (!credsFile) return false;
  let claims;
  try {
    claims = credsClaims(readFileSync(credsFile));
  } catch {
    return false;
  }
  const subject = patterns.callAsAnyTarget(space, "manager", "spawn", me).replace(".ep.manager.*.", ".ep.manager.one.");
  return !!claims?.pubAllow.some((p) => subjectMatches(p, subject));
}

/** Spawning, retiring and handing over this seat's helpers, as itself. */
export class HelperDesk {
  /** The manager each helper this seat spawned runs on, by name. */
  private readonly where = new Map<string, string>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly space: string,
    private readonly me: Principal,
    /** The manager that runs this seat; undefined for a seat started by hand. */
    private readonly manager: string | undefined,
  ) {}

  get id(): string {
    return principalId(this.me);
  }

  /** Where requests go: this seat's manager, else any. */
  private get home(): string {
    return this.manager ?? "one";
  }

  personas(): Promise<PersonasReply> {
    return callManager(this.nc, this.space, "personas", this.me, {}, { target: this.home, timeoutMs: 10_000 });
  }

  async spawn(args: SpawnArgs): Promise<SpawnReply> {
    const r = await callManager(this.nc, this.space, "spawn", this.me, args, { target: this.home, timeoutMs: SPAWN_TIMEOUT_MS });
    this.where.set(r.name, r.instance);
    return r;
  }

  async despawn(name: string): Promise<DespawnReply> {
    const r = await callManager(this.nc, this.space, "despawn", this.me, { name }, { target: this.instanceOf(name), timeoutMs: SPAWN_TIMEOUT_MS });
    this.where.delete(name);
    return r;
  }

  async handover(name: string, to: string | undefined): Promise<HandoverReply> {
    const r = await callManager(
      this.nc,
      this.space,
      "handover",
      this.me,
      { name, ...(to ? { to } : {}) },
      { target: this.instanceOf(name), timeoutMs: 10_000 },
    );
    this.where.delete(name);
    return r;
  }

  /** The manager that runs helper `name`, as its spawn answered (else this seat's). */
  private instanceOf(name: string): string {
    return this.where.get(name) ?? this.home;
  }
}
