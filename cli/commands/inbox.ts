import type { Command } from "commander";
import { z } from "zod";
import { connectMesh, readDmInbox } from "../../broker/index.js";
import { localPrincipal, messageText, principalId } from "../../schemas/index.js";
import { actingIdentity } from "../identity/acting-as.js";
import { jsonOption, meshOptions, resolveTarget } from "../mesh-client/mesh-target.js";
import { requireProfile, SENDERS } from "../terminal/errors.js";
import { formatDelivery } from "../terminal/format.js";
import { cliLog } from "../terminal/logging.js";
import { printJson, printLines } from "../terminal/output.js";
import { actingName, parseInput, positiveInt } from "../terminal/validate.js";

const InboxFlags = z.object({
  as: actingName("--as name").optional(),
  impersonate: z.boolean().optional(),
  read: z.boolean().optional(),
  limit: positiveInt("limit").default(50),
  json: z.boolean().optional(),
});

/** `cotal inbox`: the DMs waiting for you, without joining the mesh. */
export function registerInbox(program: Command): void {
  const cmd = program
    .command("inbox")
    .summary("show the DMs waiting for you and how many are unread")
    .description(
      "Show the direct messages waiting for you (unread: not yet acknowledged), oldest first, without joining the mesh " +
        "(you do not show on the roster). They stay unread unless --read marks them read (the broker then forgets them, " +
        "and `cotal listen` does not show them again). A DM a running `cotal listen` holds is counted, not shown.",
    )
    .option("--read", "mark the DMs shown as read")
    .option("--limit <n>", "show at most this many (the oldest)", "50")
    .option("--as <name>", "whose inbox (default: the credential's own name)")
    .option("--impersonate", "with the operator's credential: read --as's inbox on purpose");
  jsonOption(meshOptions(cmd)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(InboxFlags, raw, { as: "--as", limit: "--limit" });
    const target = resolveTarget(raw, undefined, f);
    requireProfile(target.creds, SENDERS, "read a DM inbox: it has none");
    const who = await actingIdentity(target, f.as, f.impersonate);
    const me = localPrincipal(who.name);
    const nc = await connectMesh({ server: target.server, creds: target.creds, name: "cotal-inbox" });
    try {
      const inbox = await readDmInbox(nc, target.creds, target.space, me, { max: f.limit, log: cliLog("inbox", { me: principalId(me) }) });
      // Printed first, settled after: a DM is marked read only once it was shown.
      if (f.json)
        printJson({
          as: principalId(me),
          unread: inbox.unread,
          shown: inbox.messages.length,
          read: !!f.read,
          messages: inbox.messages.map((m) => ({ seq: m.seq, from: principalId(m.from), text: messageText(m.message), message: m.message })),
        });
      else printLines(...inboxLines(principalId(me), inbox, !!f.read));
      await inbox.settle(!!f.read);
    } finally {
      await nc.close().catch(() => undefined);
    }
  });
}

/** The human view: a count, one line a DM, and what became of them. */
function inboxLines(me: string, inbox: Awaited<ReturnType<typeof readDmInbox>>, read: boolean): string[] {
  if (inbox.unread === 0) return [`No unread DMs for ${me}.`];
  const shown = inbox.messages.length;
  const rest = inbox.unread - shown;
  return [
    `${inbox.unread} unread DM${inbox.unread === 1 ? "" : "s"} for ${me}${rest > 0 ? ` (${rest} not shown: past --limit, or held by a running \`cotal listen\`)` : ""}:`,
    ...inbox.messages.map((m) => formatDelivery({ ...m, historical: false, possibleRepeat: m.deliveries > 1 })),
    ...(shown === 0 ? [] : [read ? `Marked ${shown} read.` : `Left unread (\`cotal inbox --read\` marks them read).`]),
  ];
}
