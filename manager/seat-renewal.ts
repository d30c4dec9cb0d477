import type { NatsConnection } from "@nats-io/transport-node";
import type { LiveSeat } from "./live-seat.js";
import type { Serial } from "./manager-context.js";
import type { ManagerOptions } from "./manager-options.js";
import { renewalCheckMs, renewalDueAt, renewSeatCredential } from "./seat-credential.js";
import { holdsName, type SeatRecord } from "./seat-table.js";

/** What renewing seats' credentials needs of the manager. */
export interface RenewalContext {
  /** Where a seat's mint request is sent again. */
  readonly nc: NatsConnection;
  readonly o: ManagerOptions;
  readonly seats: ReadonlyMap<string, SeatRecord>;
  /** The seats this manager runs: only a running seat's credential is renewed. */
  readonly live: ReadonlyMap<string, LiveSeat>;
  serial: Serial;
  /** True once the manager stopped: it writes nothing more (a successor may own the log now). */
  stopped(): boolean;
}

/** Mints running seats' credentials again before they expire (static meshes; seat-credential.ts). */
export class SeatRenewal {
  private timer?: NodeJS.Timeout;
  private running = false;
  /** Seats (by credential file) already reported as lapsing: said once, not every check. */
  private readonly lapsing = new Set<string>();

  constructor(private readonly c: RenewalContext) {}

  /** Check on a schedule the credentials' lifetime sets; an open mesh mints nothing, so never. */
  start(): void {
    if (this.c.o.mints) this.timer = setInterval(() => void this.renew(), renewalCheckMs(this.c.o.seatCredsLifetimeMs));
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * Mint again the credential of each running seat that has less than a third of its life left
   * (docs/security.md, Credential lifetime and renewal). In the manager's queue, so a renewal never
   * races a stop: a seat stopped (its credentials revoked) gets no new one.
   */
  private async renew(): Promise<void> {
    if (this.running || this.c.stopped()) return;
    this.running = true;
    try {
      for (const [seat, l] of this.c.live) {
        const creds = l.files.creds;
        const due = creds ? renewalDueAt(creds) : undefined;
        if (!creds || due === undefined || Date.now() < due) continue;
        await this.c
          .serial(async () => {
            const r = this.c.seats.get(seat);
            if (this.c.stopped() || this.c.live.get(seat) !== l || l.stopping || !r || !holdsName(r)) return;
            const o = { space: this.c.o.space, caller: this.c.o.caller, lifetimeMs: this.c.o.seatCredsLifetimeMs };
            const done = await renewSeatCredential(this.c.nc, o, creds);
            if (done === "renewed") this.c.o.log.info({ seat }, "renewed a running seat's credential");
            if (done === "no-request" && !this.lapsing.has(creds)) {
              this.lapsing.add(creds);
              this.c.o.log.warn(
                { seat },
                "a seat's credential is due for renewal, but an older manager started it without keeping its mint request: it lapses at its expiry",
              );
            }
          })
          .catch((err: unknown) => this.c.o.log.warn({ err, seat }, "renewing a seat's credential failed; tried again at the next check"));
      }
    } finally {
      this.running = false;
    }
  }
}
