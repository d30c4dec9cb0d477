// A command's connection to the mesh mesh-target.ts resolved (MeshSession): JetStream, the
// channel registry, the roster, control calls.
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  callControl,
  ChannelRegistry,
  connectMesh,
  credsCaller,
  followPresence,
  isPermissionDenied,
  isStreamNotFound,
  jetStreamConnection,
  JS_OPTIONS,
  Roster,
  watchPresence,
  type ResolvedChannel,
} from "../../broker/index.js";
import { names } from "../../schemas/index.js";
import { credentialScope } from "../identity/credential-scope.js";
import { SpaceNotProvisionedError } from "../terminal/errors.js";
import type { MeshTarget } from "./mesh-target.js";
import { cliLog } from "../terminal/logging.js";

/**
 * A short-lived connection for commands that read or administer the mesh without acting as
 * a person (status, roster, history, channels, deliver). Commands that act as someone use an
 * Endpoint instead.
 */
export class MeshSession {
  private rosterView?: Roster;
  private constructor(
    readonly target: MeshTarget,
    readonly nc: NatsConnection,
    readonly jsm: JetStreamManager,
    readonly js: JetStreamClient,
    /** In a static space's clients account: it creates no consumers (no KV watch). */
    private readonly clientAccount: boolean,
  ) {}

  /** Connect; with `requireSpace` (the default), refuse a space that was never provisioned. */
  static async open(target: MeshTarget, requireSpace = true): Promise<MeshSession> {
    const nc = await connectMesh({ server: target.server, creds: target.creds, name: "cotal-cli" });
    try {
      // A static mesh's clients account reaches JetStream only by import (see jetStreamConnection).
      const jsnc = jetStreamConnection(nc, target.creds);
      const session = new MeshSession(target, nc, await jetstreamManager(jsnc, JS_OPTIONS), jetstream(jsnc, JS_OPTIONS), jsnc !== nc);
      if (requireSpace && !(await session.spaceExists())) throw new SpaceNotProvisionedError(target.space, target.server);
      return session;
    } catch (err) {
      await nc.close().catch(() => undefined);
      throw err;
    }
  }

  /**
   * Whether the space was provisioned on this server (its CHAT_ stream exists). A credential that
   * may not look (an agent's, an observer's) cannot tell: then the mesh service's answers speak
   * for the space, and this says yes.
   */
  async spaceExists(): Promise<boolean> {
    if (!this.mayReadStreams) return true; // do not make a call the broker would refuse (and log)
    try {
      await this.jsm.streams.info(names.chatStream(this.target.space));
      return true;
    } catch (err) {
      if (isStreamNotFound(err)) return false;
      if (isPermissionDenied(err)) return true;
      throw err;
    }
  }

  /** Open one of the space's KV buckets; a missing bucket means the space was never provisioned. */
  async bucket(name: string): Promise<KV> {
    try {
      return await new Kvm(this.js).open(name, { bindOnly: true });
    } catch (cause) {
      throw new SpaceNotProvisionedError(this.target.space, this.target.server, cause);
    }
  }

  /** The live roster of the space (read once the bucket's current state arrived). */
  async roster(): Promise<Roster> {
    if (!this.rosterView) {
      const log = cliLog("roster");
      const roster = new Roster(log);
      this.rosterView = roster;
      // A snapshot from the mesh service, then live writes: records are written only when they
      // change, and only the mesh service knows every live endpoint (protocol 0.3).
      const space = this.target.space;
      const snapshot = (after?: string) => callControl(this.nc, space, "roster", credsCaller(this.target.creds), after ? { after } : {});
      if (!this.clientAccount) {
        try {
          await followPresence(this.nc, space, roster, snapshot, log);
        } catch (err) {
          // The operator may still look without the mesh service: the bucket holds what changed lately.
          log.warn({ err }, "the mesh service did not give a roster; showing only presence written in the last liveness window");
          await watchPresence(await this.bucket(names.presenceBucket(space)), roster, log);
        }
      } else {
        // A client credential creates no consumers.
        await followPresence(this.nc, space, roster, snapshot, log);
      }
    }
    return this.rosterView;
  }

  /**
   * Every configured channel. A client credential may not watch the registry's keys (that needs a
   * consumer): the mesh service lists them on the control rail instead.
   */
  async configuredChannels(): Promise<ResolvedChannel[]> {
    if (!this.clientAccount) return (await this.channels()).list();
    return callControl(this.nc, this.target.space, "channels", credsCaller(this.target.creds));
  }

  /**
   * Whether this credential may read stream state (`$JS.API.STREAM.INFO`): the operator's may, and
   * open meshes have no credentials; a minted profile (agent, observer, admin, manager) may not, so
   * no such call is made for it.
   */
  get mayReadStreams(): boolean {
    const profile = this.target.creds ? credentialScope(this.target.creds)?.profile : undefined;
    return profile === undefined || profile === "operator";
  }

  /** Whether this session's credential is a client's (it reaches only the read-only JetStream API). */
  get isClient(): boolean {
    return this.clientAccount;
  }

  async channels(): Promise<ChannelRegistry> {
    return new ChannelRegistry(await this.bucket(names.channelsBucket(this.target.space)));
  }

  async close(): Promise<void> {
    this.rosterView?.stop();
    if (!this.nc.isClosed()) await this.nc.close().catch(() => undefined);
  }
}

/** Open a session, run `fn`, always close. */
export async function withSession<T>(target: MeshTarget, fn: (s: MeshSession) => Promise<T>): Promise<T> {
  const s = await MeshSession.open(target);
  try {
    return await fn(s);
  } finally {
    await s.close();
  }
}
