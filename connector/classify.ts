// How mail reaches a seat's agent (pure): directed mail (DMs, anycasts, mentions) first, channel
// traffic next, muted channels and history only on request. The inbox orders, evicts and wakes by
// this class; the seat calls it again when a channel's mode changes.
import { principalId, type ChannelMode, type Principal } from "../schemas/index.js";
import type { Classifier } from "./inbox.js";

/** The classifier of the seat `me`, reading each channel's mode through `modeOf`. */
export function seatClassifier(me: Principal, modeOf: (channel: string) => ChannelMode): Classifier {
  // Mentions are lowercased on the wire; names need not be.
  const mine = [me.actor.toLowerCase(), principalId(me).toLowerCase()];
  return (mail) => {
    if (mail.kind !== "channel") return { cls: "directed", mentionsYou: false };
    const mentionsYou = (mail.message.mentions ?? []).some((n) => mine.includes(n.toLowerCase()));
    const mode = mail.channel ? modeOf(mail.channel) : "normal";
    if (mode === "muted" || mail.historical) return { cls: "pull", mentionsYou };
    return { cls: mentionsYou ? "directed" : "channel", mentionsYou };
  };
}
