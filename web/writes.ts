import { z } from "zod";
import { Endpoint, readDmInbox, type Logger, type Receipt } from "../broker/index.js";
import { ChannelName, localPrincipal, messageText, parsePrincipal, principalId, PrincipalId, PrincipalToken } from "../schemas/index.js";
import { renderMarkdown } from "./markdown.js";

/** The longest text the composer sends (a message's own limit is checked by the broker again). */
const MAX_TEXT = 64 * 1024;
/** How many of the person's unread DMs the Inbox shows (the oldest). */
const INBOX_SHOWN = 100;

const Text = z.string().trim().min(1, "the message text must not be empty").max(MAX_TEXT, `at most ${MAX_TEXT} characters`);
/** A message id to answer (the id a post or DM carries). */
const ReplyTo = z
  .string()
  .regex(/^\S{1,256}$/, "replyTo must be the id of a message (no spaces)")
  .optional();
/** Names `@name` completed from the roster: each is woken, and must be on the roster (the broker checks). */
const Mentions = z.array(PrincipalToken).max(32).optional();

/** POST /api/post. */
export const PostBody = z.strictObject({ channel: ChannelName, text: Text, replyTo: ReplyTo, mentions: Mentions });
/** POST /api/dm: `to` an actor name (`bob`) or a principal id (`local.bob`). */
export const DmBody = z.strictObject({ to: z.union([PrincipalToken, PrincipalId]), text: Text, replyTo: ReplyTo });
/** POST /api/inbox/read: the stream sequences of the DMs the page showed and the person marks read. */
export const InboxReadBody = z.strictObject({ seqs: z.array(z.number().int().positive()).min(1).max(INBOX_SHOWN) });

/** What a write answers: the broker's receipt, and its line in words (as `cotal send` prints it). */
export interface WriteResult {
  receipt: Receipt;
  text: string;
}

/** One unread DM of the person, as the Inbox shows it. */
export interface InboxMessage {
  seq: number;
  id: string;
  from: string;
  sentBy?: string;
  at: number;
  html: string;
  replyTo?: string;
}

/** The person's inbox: how many DMs wait unread, and the oldest of them. */
export interface InboxView {
  as: string;
  unread: number;
  messages: InboxMessage[];
}

/** Who the dashboard writes as, and with what. */
export interface PersonWriterOptions {
  server: string;
  space: string;
  /** The person's credential (a static mesh); none on an open mesh. */
  creds?: string | undefined;
  /** The person's actor name (their principal is `local.<name>`). */
  name: string;
  log: Logger;
  /** A receipt in words (the CLI's wording, `cotal send`'s line). */
  receiptLine: (r: Receipt) => string;
}

/**
 * The dashboard's writes, as the person (docs/web.md): an Endpoint on the person's own credential,
 * never joined (the dashboard does not show on the roster), so every post and DM names the person
 * as its sender and the broker checks it as theirs. The Inbox reads the person's DM inbox as
 * `cotal inbox` does: showing leaves DMs unread; marking read acknowledges exactly those shown.
 */
export class PersonWriter {
  private constructor(
    private readonly ep: Endpoint,
    private readonly o: PersonWriterOptions,
  ) {}

  static async open(o: PersonWriterOptions): Promise<PersonWriter> {
    const ep = await Endpoint.connect({ server: o.server, space: o.space, creds: o.creds, name: o.name });
    return new PersonWriter(ep, o);
  }

  /** The person's connection (the steer calls go out on it, as the person). */
  get nc() {
    return this.ep.nc;
  }

  /** The principal every write is sent as. */
  get as(): string {
    return principalId(localPrincipal(this.o.name));
  }

  async post(b: z.infer<typeof PostBody>): Promise<WriteResult> {
    const receipt = await this.ep.send(b.channel, b.text, {
      ...(b.replyTo ? { replyTo: b.replyTo } : {}),
      ...(b.mentions?.length ? { mentions: b.mentions } : {}),
    });
    return { receipt, text: this.o.receiptLine(receipt) };
  }

  async dm(b: z.infer<typeof DmBody>): Promise<WriteResult> {
    const receipt = await this.ep.dm(b.to, b.text, b.replyTo ? { replyTo: b.replyTo } : {});
    return { receipt, text: this.o.receiptLine(receipt) };
  }

  /** The unread DMs, handed back at once (unread, to whoever reads the inbox next: `cotal inbox`, `cotal listen`). */
  async inbox(): Promise<InboxView> {
    const read = await this.readInbox();
    await read.settle(false);
    return { as: this.as, unread: read.unread, messages: read.messages.map(inboxMessage) };
  }

  /** How many DMs wait unread (nothing is taken: the Inbox count in the page's nav). */
  async unread(): Promise<number> {
    const read = await readDmInbox(this.ep.nc, this.o.creds, this.o.space, parsePrincipal(this.as), { max: 0, log: this.o.log });
    return read.unread;
  }

  /** Mark read the DMs with these sequences (acknowledged: the broker forgets them); the others stay unread. */
  async markRead(seqs: readonly number[]): Promise<{ marked: number; unread: number }> {
    const read = await this.readInbox();
    const wanted = new Set(seqs);
    await read.settle((seq) => wanted.has(seq));
    const marked = read.messages.filter((m) => wanted.has(m.seq)).length;
    return { marked, unread: read.unread - marked };
  }

  private readInbox() {
    return readDmInbox(this.ep.nc, this.o.creds, this.o.space, parsePrincipal(this.as), { max: INBOX_SHOWN, log: this.o.log });
  }

  async close(): Promise<void> {
    await this.ep.close();
  }
}

function inboxMessage(m: Awaited<ReturnType<typeof readDmInbox>>["messages"][number]): InboxMessage {
  return {
    seq: m.seq,
    id: m.message.id,
    from: principalId(m.from),
    ...(m.message.sentBy ? { sentBy: m.message.sentBy } : {}),
    at: m.message.ts,
    html: renderMarkdown(messageText(m.message)),
    ...(m.message.replyTo ? { replyTo: m.message.replyTo } : {}),
  };
}
