import { readDmInbox, type Logger } from "../../broker/index.js";
import { parsePrincipal, principalId, type Principal } from "../../schemas/index.js";
import { credentialScope } from "../identity/credential-scope.js";
import { formatDelivery } from "../terminal/format.js";

/** How often the console looks at the person's inbox, ms: a count first, the DMs only when it changed. */
const INBOX_POLL_MS = 5_000;
/** The most DMs one look shows (the oldest unread first, as `cotal inbox`). */
const INBOX_SHOWN = 20;

/** What the console shows of the inbox after a look. */
export interface InboxView {
  /** Whose inbox. */
  me: string;
  unread: number;
  /** DMs not shown before, each one line as `cotal inbox` words it. */
  fresh: string[];
}

/**
 * The DM inbox of the person the console reads as (docs/cli.md, cotal console): the unread count
 * and each DM once, read as `cotal inbox` reads it and handed back, so they stay unread for `cotal
 * inbox` and `cotal listen`. Only a person's credential has an inbox of its own here; the observer
 * the operator's console reads with has none, and nothing is shown.
 */
export class ConsoleInbox {
  private timer?: NodeJS.Timeout;
  private lastUnread = -1;
  private readonly seen = new Set<number>();
  private looking = false;

  private constructor(
    private readonly look: (max: number) => Promise<{ unread: number; lines: Array<{ seq: number; line: string }> }>,
    private readonly me: Principal,
    private readonly onView: (v: InboxView) => void,
    private readonly log: Logger,
  ) {}

  /** The inbox of the console's credential when it is a person's; undefined otherwise. */
  static of(
    s: { nc: Parameters<typeof readDmInbox>[0]; target: { creds?: string | undefined; space: string } },
    onView: (v: InboxView) => void,
    log: Logger,
  ): ConsoleInbox | undefined {
    const scope = s.target.creds ? credentialScope(s.target.creds) : undefined;
    if (scope?.profile !== "person" || !scope.principal) return undefined;
    const me = parsePrincipal(scope.principal);
    const look = async (max: number) => {
      const inbox = await readDmInbox(s.nc, s.target.creds, s.target.space, me, { max, log });
      const lines = inbox.messages.map((m) => ({
        seq: m.seq,
        line: formatDelivery({ ...m, historical: false, possibleRepeat: m.deliveries > 1 }),
      }));
      await inbox.settle(false);
      return { unread: inbox.unread, lines };
    };
    return new ConsoleInbox(look, me, onView, log);
  }

  /** Look now, then every few seconds until close(). */
  start(): void {
    void this.lookOnce();
    this.timer = setInterval(() => void this.lookOnce(), INBOX_POLL_MS);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

  private async lookOnce(): Promise<void> {
    if (this.looking) return;
    this.looking = true;
    try {
      const count = await this.look(0);
      if (count.unread === this.lastUnread) return;
      const read = count.unread > 0 ? await this.look(INBOX_SHOWN) : count;
      this.lastUnread = read.unread;
      const fresh = read.lines.filter((l) => !this.seen.has(l.seq));
      for (const l of fresh) this.seen.add(l.seq);
      this.onView({ me: principalId(this.me), unread: read.unread, fresh: fresh.map((l) => l.line) });
    } catch (err) {
      this.log.debug({ err }, "reading the inbox failed; trying again at the next look");
    } finally {
      this.looking = false;
    }
  }
}

/** The console's line for an inbox count. */
export function inboxCountLine(v: InboxView): string {
  return `inbox ${v.unread === 0 ? "no unread DMs" : `${v.unread} unread DM${v.unread === 1 ? "" : "s"}`} for ${v.me}`;
}
