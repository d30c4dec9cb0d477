import { CotalError } from "../schemas/index.js";

/** The caller may not read that channel. */
export class ReadDeniedError extends CotalError {
  constructor(channel: string) {
    super("read-denied", `Not allowed to read channel ${channel}.`, {
      remedy: "Ask the mesh admin for a credential whose --allow-subscribe includes it.",
    });
  }
}

/** An event plane has no durable membership: it is a rolling window, read live and by history. */
export class NoPlaneMembershipError extends CotalError {
  constructor(channel: string) {
    super("no-plane-membership", `${channel} is an event plane: it is read live and by history, and has no durable membership.`, {
      remedy: "Read it with `cotal history`, `cotal console` or a live subscription; joining it as a channel does that.",
    });
  }
}

/** The credential does not hold the role it asked to register. */
export class RoleNotGrantedError extends CotalError {
  constructor(role: string, granted: string | undefined) {
    super("role-not-granted", `This credential does not hold the role ${role}${granted ? ` (it holds ${granted})` : " (it holds none)"}.`, {
      remedy: "Roles come from the credential: ask the mesh admin for one minted with --role, or leave the role out.",
    });
  }
}
