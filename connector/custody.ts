// Custody of a principal on this host: the one connector that holds the seat's hook socket is the
// only one that consumes its mail. Custody also owns the seat's local files: the per-launch token
// (kept private to this module: only the hook socket compares it), the token and pairing files a
// hand-started session's hooks read, and the note of mail handed back at shutdown.
import { randomBytes } from "node:crypto";
import { readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { BoundedSet, type Logger } from "../broker/index.js";
import { principalId, type Principal } from "../schemas/index.js";
import type { ConnectorConfig } from "./config.js";
import { UnsafeControlDirError } from "./errors.js";
import { HookSocket, type HookHandler } from "./hook-socket.js";
import { ID_MEMORY } from "./inbox.js";
import { controlDir, ensureControlDir, pairingFile, seatPaths, type SeatPaths } from "./paths.js";

/** Write a private (0600) file atomically: a reader sees the old content or the new, never half. */
function writePrivate(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, file);
}

export class Custody {
  /** The per-launch token hooks must present. Never leaves this object except into the token file. */
  readonly #token: string;
  /** Files this connector wrote and removes when it lets go. */
  private readonly written: string[] = [];
  private released?: Promise<void>;

  private constructor(
    readonly dir: string,
    readonly paths: SeatPaths,
    readonly socket: HookSocket,
    token: string,
  ) {
    this.#token = token;
  }

  /**
   * Claim custody: a private control directory, then the hook socket (CustodyHeldError when a
   * live connector holds it). Nothing is consumed before this succeeds.
   */
  static async claim(cfg: ConnectorConfig, me: Principal, log: Logger): Promise<Custody> {
    const dir = controlDir(cfg.env, cfg.launch.controlDir);
    const unsafe = ensureControlDir(dir);
    if (unsafe) throw new UnsafeControlDirError(dir, unsafe);
    const paths = seatPaths(dir, { space: cfg.launch.space, owner: me.owner, actor: me.actor });
    const socket = await HookSocket.claim(paths, principalId(me), log, { confirmTimeoutMs: cfg.confirmTimeoutMs });
    return new Custody(dir, paths, socket, cfg.launch.controlToken ?? randomBytes(32).toString("hex"));
  }

  /** Start answering hooks with `handler` (requests that came earlier waited for this). */
  serve(handler: HookHandler): void {
    this.socket.serve(handler, this.#token);
  }

  /**
   * Write the token file (a hand-started session's hooks read it; a managed seat's hooks have the
   * token in their launch material) and the pairing file for this connector's Claude process.
   */
  writeLocalFiles(launchSource: "env" | "material", parentPid: number): void {
    const writeToken = () => {
      writePrivate(this.paths.tokenFile, this.#token + "\n");
      this.written.push(this.paths.tokenFile);
    };
    if (launchSource === "env") writeToken();
    if (parentPid > 1) {
      const pairing = pairingFile(this.dir, parentPid);
      writePrivate(pairing, JSON.stringify({ socket: this.paths.socket, tokenFile: this.paths.tokenFile }) + "\n");
      this.written.push(pairing);
      if (launchSource === "material") writeToken();
    }
  }

  /**
   * Read (and remove) the ids the previous incarnation gave back at shutdown. A nak'd message
   * comes back with the broker's delivery count unchanged, so without this its redelivery would
   * not read as a possible repeat, though the previous session may have been shown it. Only the
   * custody holder reads it.
   */
  takeReturnedIds(): BoundedSet<string> {
    const ids = new BoundedSet<string>(ID_MEMORY);
    try {
      const json = JSON.parse(readFileSync(this.paths.returnedFile, "utf8")) as unknown;
      if (Array.isArray(json)) for (const id of json.slice(0, ID_MEMORY)) if (typeof id === "string") ids.add(id);
      unlinkSync(this.paths.returnedFile);
    } catch {
      // none: the previous incarnation held nothing, or never ran here
    }
    return ids;
  }

  /** Note the ids of mail handed back to the broker, for the next incarnation. */
  noteReturnedIds(ids: readonly string[]): void {
    if (ids.length) writePrivate(this.paths.returnedFile, JSON.stringify(ids));
  }

  /** Stop answering hooks and remove the socket, token and pairing files. Once. */
  release(): Promise<void> {
    this.released ??= (async () => {
      await this.socket.close().catch(() => undefined);
      for (const f of this.written.splice(0)) {
        try {
          unlinkSync(f);
        } catch {
          // already gone
        }
      }
    })();
    return this.released;
  }
}
