import type { Command } from "commander";
import { z } from "zod";
import { callControl, collectHistory, credsCaller } from "../../broker/index.js";
import { messageText, principalId } from "../../schemas/index.js";
import { jsonOption, meshOptions, resolveTarget } from "../mesh-client/mesh-target.js";
import { attachmentsLabel, senderLabel } from "../terminal/format.js";
import { clock, oneLine, printJson, printLines } from "../terminal/output.js";
import { withSession } from "../mesh-client/session.js";
import { channelName, duration, parseInput, positiveInt } from "../terminal/validate.js";

/**
 * How far back --since reaches, in ms: at most back to 1970 (Unix time 0). A longer one would
 * be a start time before the epoch, or one JavaScript cannot even represent ("Invalid time value").
 */
const since = duration.refine((ms) => Number.isSafeInteger(ms) && ms <= Date.now(), {
  message: "reaches back before 1970, earlier than any stored post; use a shorter duration such as 7d, or leave --since out for every stored post",
});

const HistoryFlags = z.object({
  channel: channelName,
  since: since.optional(),
  limit: positiveInt("limit").default(100),
  json: z.boolean().optional(),
});

/** `cotal history`: stored posts of a channel. */
export function registerHistory(program: Command): void {
  const cmd = program
    .command("history")
    .summary("show the stored posts of a channel")
    .description("Show the posts stored on a channel, oldest first: all that are stored, or those since --since; at most --limit (the newest).")
    .argument("<channel>", "channel name")
    .option("--since <duration>", "only posts newer than this, e.g. 30m, 1h, 7d")
    .option("--limit <n>", "at most this many (the newest)", "100");
  jsonOption(meshOptions(cmd)).action(async (channel: string, raw: Record<string, unknown>) => {
    const f = parseInput(HistoryFlags, { ...raw, channel }, { channel: "<channel>" });
    const target = resolveTarget(raw, undefined, {});
    // Through the mesh service, page by page: it enforces the credential's read scope, and no
    // client credential may create the consumer a direct read needs.
    const items = await withSession(target, (s) => {
      const caller = credsCaller(target.creds);
      const query = { ...(f.since !== undefined ? { sinceMs: Date.now() - f.since } : {}), limit: f.limit };
      return collectHistory(f.channel, query, (args) => callControl(s.nc, target.space, "history", caller, args));
    });
    if (f.json) {
      printJson(
        items.map((h) => ({
          seq: h.seq,
          storedAt: new Date(h.storedAt).toISOString(),
          from: principalId(h.from),
          channel: h.channel,
          text: messageText(h.message),
          message: h.message,
        })),
      );
      return;
    }
    if (items.length === 0) {
      printLines(`No posts on #${f.channel}${f.since !== undefined ? " in that time" : ""}.`);
      return;
    }
    printLines(
      ...items.map(
        (h) =>
          `${new Date(h.storedAt).toISOString().slice(0, 10)} ${clock(h.storedAt)} #${h.channel} ${senderLabel(h.message)}: ${oneLine(messageText(h.message))}${attachmentsLabel(h.message)}  [seq ${h.seq}]`,
      ),
    );
  });
}
