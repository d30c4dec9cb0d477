import { createHash } from "node:crypto";
import { principalDashed, type Principal } from "./principal.js";
import { assertChannel, assertToken } from "./tokens.js";

/**
 * Names of the durable consumers agents bind to but never create (docs/SPEC.md §4). The mesh
 * service (or `cotal mint --provision`) creates them; broker permissions let each identity
 * bind only its own.
 */
export const durables = {
  /**
   * A principal's DM inbox on DM_<space>. Without a uid it is the name's own inbox, which
   * outlives any one session; a seat incarnation's inbox carries its lifecycle uid.
   */
  dm: (p: Principal, uid?: string) => (uid === undefined ? `dm_${principalDashed(p)}` : `dm_${principalDashed(p)}-${assertToken("uid", "lifecycle uid", uid)}`),
  /** The shared work-queue consumer of a role on TASK_<space>. */
  anycast: (role: string) => `svc_${assertToken("name", "role", role)}`,
  /**
   * One durable channel membership on CHAT_<space>. Channel names may contain dots, which
   * consumer names cannot, so the channel is named by a short stable digest.
   */
  channel: (p: Principal, channel: string, uid?: string) => {
    const digest = createHash("sha256").update(assertChannel(channel)).digest("hex").slice(0, 12);
    const who = uid === undefined ? principalDashed(p) : `${principalDashed(p)}-${assertToken("uid", "lifecycle uid", uid)}`;
    return `ch_${who}-${digest}`;
  },
};
