import { constants } from "node:fs";
import { access } from "node:fs/promises";
import type { Command } from "commander";
import { z } from "zod";
import { parsePrincipal, principalId, type ArtifactGrant } from "../../schemas/index.js";
import { MeshServiceUnavailableError, putArtifact, type ArtifactPart, type Content, type Endpoint, type Receipt } from "../../broker/index.js";
import { receiptLine } from "../../connector/index.js";
import { connectAs } from "../identity/connect-as.js";
import { jsonOption, meshOptions, resolveTarget } from "../mesh-client/mesh-target.js";
import { MeshServiceDownError, requireProfile, SENDERS, UsageError } from "../terminal/errors.js";
import { actingIdentity } from "../identity/acting-as.js";
import { messageText } from "../terminal/message-text.js";
import { printJson, printLines } from "../terminal/output.js";
import { repeatable, actingName, actorName, channelName, parseInput, token } from "../terminal/validate.js";

const Common = z.object({
  as: actingName("--as name").optional(),
  impersonate: z.boolean().optional(),
  json: z.boolean().optional(),
  text: z.string().min(1, "the message text must not be empty"),
});

/** --attach FILE (repeatable): each file becomes an artifact part beside the text, which may then be empty. */
const Attachable = Common.extend({ text: z.string(), attach: z.array(z.string().min(1)).default([]) });
const hasContent: [(f: { text: string; attach: string[] }) => boolean, { message: string; path: string[] }] = [
  (f) => f.text !== "" || f.attach.length > 0,
  { message: "the message text must not be empty (or give --attach FILE)", path: ["text"] },
];
const ATTACH_HELP = "store FILE in the mesh and send an artifact part naming it (repeatable; `cotal fetch <digest>` reads it)";

/** The content of a send: the text (if any) and one artifact part per --attach file, stored first. */
async function withAttachments(
  ep: Endpoint,
  text: string,
  files: string[],
  stored: Array<{ part: ArtifactPart; uploaded: boolean }>,
  audience: ArtifactGrant,
): Promise<Content> {
  for (const file of files) {
    try {
      await access(file, constants.R_OK);
    } catch (cause) {
      throw new UsageError(
        `Invalid input: --attach: cannot read ${JSON.stringify(file)} (${(cause as NodeJS.ErrnoException).code ?? "error"}); nothing was sent.`,
        { remedy: "Name a readable file.", cause },
      );
    }
  }
  // The message's readers may fetch the files too (static meshes check it; see docs/security.md).
  for (const file of files) stored.push(await putArtifact(ep, file, { audience: [audience] }));
  return stored.length === 0 ? text : [...(text ? [{ kind: "text" as const, text }] : []), ...stored.map((s) => s.part)];
}

const ARG_LABELS = { channel: "<channel>", name: "<name>", role: "<role>", text: "<text>", as: "--as" };

/** `cotal send msg|dm|ask`: post, DM or anycast as a person. */
export function registerSend(program: Command): void {
  const send = program
    .command("send")
    .summary("send a channel post, a DM or an anycast")
    .description(
      "Send a message as the credential's own name (with the operator's credential: --as NAME --impersonate). The receipt says what the broker stored " +
        "and what was known of the recipient at send time; it never claims delivery.",
    );

  const msg = send
    .command("msg")
    .description("post on a channel")
    .argument("<channel>", "channel name, e.g. general or team.backend")
    .argument("[text...]", "the message (several words are joined with spaces; `-` reads standard input)")
    .option("--as <name>", "who sends (default: the credential's own name)")
    .option("--impersonate", "with the operator's credential: send as --as on purpose (marked as sent by the operator)")
    .option("--file <path>", "send the contents of a text file as the message")
    .option("--mention <names>", "comma-separated names to wake (each must be in the roster)")
    .option("--attach <file>", ATTACH_HELP, repeatable);
  jsonOption(meshOptions(msg)).action(async (channel: string, words: string[], raw: Record<string, unknown>) => {
    const f = parseInput(
      Attachable.extend({ channel: channelName, mention: z.string().optional() }).refine(...hasContent),
      { ...raw, channel, text: await messageText(words, raw.file as string | undefined) },
      ARG_LABELS,
    );
    const mentions = f.mention ? parseMentions(f.mention) : undefined;
    await sendAs(raw, f, f.json, async (ep, stored) => {
      if (mentions) await rosterForMentions(ep);
      return ep.send(f.channel, await withAttachments(ep, f.text, f.attach, stored, { channel: f.channel }), mentions ? { mentions } : {});
    });
  });

  const dm = send
    .command("dm")
    .description("send a direct message to one person or agent")
    .argument("<name>", "recipient's name")
    .argument("[text...]", "the message (`-` reads standard input)")
    .option("--as <name>", "who sends (default: the credential's own name)")
    .option("--impersonate", "with the operator's credential: send as --as on purpose (marked as sent by the operator)")
    .option("--file <path>", "send the contents of a text file as the message")
    .option("--attach <file>", ATTACH_HELP, repeatable);
  jsonOption(meshOptions(dm)).action(async (name: string, words: string[], raw: Record<string, unknown>) => {
    const f = parseInput(
      Attachable.extend({ name: actorName("recipient name") }).refine(...hasContent),
      { ...raw, name, text: await messageText(words, raw.file as string | undefined) },
      ARG_LABELS,
    );
    await sendAs(raw, f, f.json, async (ep, stored) =>
      ep.dm(f.name, await withAttachments(ep, f.text, f.attach, stored, { to: principalId(parsePrincipal(f.name)) })),
    );
  });

  const ask = send
    .command("ask")
    .description("send to any one holder of a role (anycast)")
    .argument("<role>", "the role, e.g. reviewer")
    .argument("[text...]", "the message (`-` reads standard input)")
    .option("--as <name>", "who sends (default: the credential's own name)")
    .option("--impersonate", "with the operator's credential: send as --as on purpose (marked as sent by the operator)")
    .option("--file <path>", "send the contents of a text file as the message")
    .option("--attach <file>", ATTACH_HELP, repeatable);
  jsonOption(meshOptions(ask)).action(async (role: string, words: string[], raw: Record<string, unknown>) => {
    const f = parseInput(
      Attachable.extend({ role: token("name", "role") }).refine(...hasContent),
      { ...raw, role, text: await messageText(words, raw.file as string | undefined) },
      ARG_LABELS,
    );
    await sendAs(raw, f, f.json, async (ep, stored) => ep.anycast(f.role, await withAttachments(ep, f.text, f.attach, stored, { role: f.role })));
  });
}

/** --mention is checked against the roster, which the mesh service serves: no roster, nothing sent. */
async function rosterForMentions(ep: Endpoint): Promise<void> {
  try {
    await ep.roster();
  } catch (err) {
    if (err instanceof MeshServiceUnavailableError) {
      throw new MeshServiceDownError("--mention needs the roster to check each name, and the mesh service did not answer: nothing was sent.", {
        remedy: "Run `cotal up` on the mesh host (it starts or repairs the mesh service), or send without --mention.",
        cause: err,
      });
    }
    throw err;
  }
}

function parseMentions(list: string): string[] {
  const names = list
    .split(",")
    .map((n) => n.trim())
    .filter(Boolean);
  const bad = names.filter((n) => !/^[A-Za-z0-9_]{1,64}(\.[A-Za-z0-9_]{1,64})?$/.test(n));
  if (bad.length || names.length === 0) {
    throw new UsageError(`Invalid input: --mention: ${bad.length ? bad.map((n) => JSON.stringify(n)).join(", ") + " are not names" : "no names given"}.`, {
      remedy: "Give comma-separated names of letters, digits and '_' (as shown by `cotal roster`).",
    });
  }
  return names;
}

async function sendAs(
  raw: Record<string, unknown>,
  f: { as?: string | undefined; impersonate?: boolean | undefined },
  json: boolean | undefined,
  fn: (ep: Endpoint, stored: Array<{ part: ArtifactPart; uploaded: boolean }>) => Promise<Receipt>,
): Promise<void> {
  const target = resolveTarget(raw, undefined, f);
  requireProfile(target.creds, SENDERS, "send messages (post, DM or anycast)");
  const who = await actingIdentity(target, f.as, f.impersonate);
  const ep = await connectAs(target, who.name, who.impersonatedBy ? { impersonatedBy: who.impersonatedBy } : {});
  try {
    // Storing needs only the broker: with the mesh service down the message is still stored,
    // and the receipt says presence was unknown at send. Only --mention needs the roster first.
    const stored: Array<{ part: ArtifactPart; uploaded: boolean }> = [];
    const receipt = await fn(ep, stored);
    // The receipt is data (what was stored, who it was for); its line is the words for people.
    const line = receiptLine(receipt);
    if (json) printJson({ ...receipt, text: line, ...(stored.length ? { artifacts: stored.map((s) => ({ ...s.part, uploaded: s.uploaded })) } : {}) });
    else printLines(line, ...stored.map((s) => `attached ${s.part.name}: ${s.part.digest} (${s.part.size} bytes${s.uploaded ? "" : ", already stored"})`));
  } finally {
    await ep.close();
  }
}
