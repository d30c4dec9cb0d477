// The terminal UI of `cotal console` (Ink, the React renderer Claude Code itself is built with).
// React.createElement instead of JSX keeps the build and lint setup unchanged.
import type * as Ink from "./console-ink.js";
import { answerApproval, approvalEventsOf, credsCaller, OpenApprovalSet, type RosterEntry } from "../../broker/index.js";
import { inputLine } from "../terminal/approval-text.js";
import { eventsChannelOf, parsePrincipal, principalId } from "../../schemas/index.js";
import { rosterLine } from "../commands/console.js";
import { ConsoleFeed, FrameRenderer, plainLines, planesOf, type FeedItem } from "./console-feed.js";
import { ConsoleInbox, inboxCountLine, type InboxView } from "./console-inbox.js";
import { cliLog } from "../terminal/logging.js";
import type { MeshSession } from "../mesh-client/session.js";

/** One rendered line, with what it belongs to (for the tabs). */
interface Line {
  agent?: string;
  channel: string;
  text: string;
  historical: boolean;
}

/** What the UI shows, kept outside React and fed by the console feed and the roster. */
class ConsoleModel {
  roster: RosterEntry[] = [];
  lines: Line[] = [];
  agents: string[] = [];
  stale?: string;
  /** The seats' open permission asks, folded from the planes' frames. */
  readonly asks = new OpenApprovalSet();
  /** The outcome of the last answer given from here. */
  notice?: string;
  /** The person's own inbox (a person's console only): its count and the latest DMs. */
  inbox?: { count: string; latest: string[] };
  private readonly listeners = new Set<() => void>();
  private readonly renderer = new FrameRenderer();

  /** `fixed`: the agents `--agent` named (then only they get tabs). */
  constructor(
    readonly channels: string[],
    private readonly fixed: string[],
  ) {
    this.agents = [...fixed];
  }

  add(item: FeedItem): void {
    const who = item.from.owner === "local" ? item.from.actor : principalId(item.from);
    for (const text of plainLines(item, this.renderer))
      this.lines.push({ ...(item.frame ? { agent: who } : {}), channel: item.channel, text, historical: item.historical });
    if (item.frame) for (const e of approvalEventsOf(item.from, item.frame)) this.asks.apply(e);
    if (item.frame && !this.fixed.length && !this.agents.includes(who)) this.agents.push(who);
    if (this.lines.length > 2_000) this.lines.splice(0, this.lines.length - 2_000);
    this.changed();
  }

  setRoster(entries: RosterEntry[]): void {
    this.roster = entries;
    if (!this.fixed.length) for (const e of entries) if (e.presence.card.kind === "agent" && !this.agents.includes(e.name)) this.agents.push(e.name);
    this.changed();
  }

  setInbox(v: InboxView): void {
    this.inbox = { count: inboxCountLine(v).replace(/^inbox /, ""), latest: [...(this.inbox?.latest ?? []), ...v.fresh].slice(-5) };
    this.changed();
  }

  setNotice(text: string): void {
    this.notice = text;
    this.changed();
  }

  setStale(why: string): void {
    this.stale = why;
    this.changed();
  }

  get tabs(): string[] {
    return ["feed", ...this.agents, ...this.channels.map((c) => `#${c}`)];
  }

  linesOf(tab: string): Line[] {
    if (tab === "feed") return this.lines;
    if (tab.startsWith("#")) return this.lines.filter((l) => !l.agent && l.channel === tab.slice(1));
    return this.lines.filter((l) => l.agent === tab);
  }

  subscribe(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private changed(): void {
    for (const fn of this.listeners) fn();
  }
}

/** Ink and React, loaded with the console (cli/console/console-ink.ts); the build points this at dist/console-ink.mjs. */
async function loadInk(): Promise<typeof Ink> {
  return import("./console-ink.js");
}

/** The UI's root component, drawn with the Ink and React `loadInk` loaded. */
const appOf = ({ Box, Text, useApp, useInput, useStdout, createElement: h, useEffect, useState }: typeof Ink) =>
  function App({ model, answer }: { model: ConsoleModel; answer: (decision: "allow" | "deny") => void }) {
    const [, setVersion] = useState(0);
    const [tab, setTab] = useState(0);
    const { exit } = useApp();
    const { stdout } = useStdout();
    useEffect(() => model.subscribe(() => setVersion((v) => v + 1)), [model]);
    useInput((input, key) => {
      const n = model.tabs.length;
      if (input === "q" || (key.ctrl && input === "c")) exit();
      else if (input === "a" || input === "d") answer(input === "a" ? "allow" : "deny");
      else if (key.rightArrow || key.tab) setTab((t) => (t + 1) % n);
      else if (key.leftArrow) setTab((t) => (t - 1 + n) % n);
    });
    const rows = Math.max(10, (stdout.rows ?? 24) - 4);
    const tabs = model.tabs;
    const current = tabs[Math.min(tab, tabs.length - 1)] ?? "feed";
    const lines = model.linesOf(current).slice(-rows);
    const asks = model.asks.list();
    return h(
      Box,
      { flexDirection: "column" },
      h(Text, { bold: true }, `cotal console — ${model.stale ? `[stale] ${model.stale}` : "live"}   (←/→ tabs, a/d allow/deny the oldest ask, q quits)`),
      h(
        Box,
        { flexDirection: "row" },
        h(
          Box,
          { flexDirection: "column", width: 44, borderStyle: "single", paddingX: 1 },
          h(Text, { bold: true }, "Roster"),
          ...(model.roster.length
            ? model.roster.map((e) => h(Text, { key: e.id, wrap: "truncate-end", dimColor: e.status === "offline" }, rosterLine(e).replace(/^roster /, "")))
            : [h(Text, { key: "none", dimColor: true }, "nobody here")]),
          h(Text, { bold: true }, `Asks (${asks.length})`),
          ...asks.map((a) => h(Text, { key: a.id, wrap: "truncate-end" }, `${a.id} ${a.seat.replace(/^local\./, "")} ${a.tool}: ${inputLine(a, 60)}`)),
          ...(model.notice ? [h(Text, { key: "notice", dimColor: true, wrap: "truncate-end" }, model.notice)] : []),
          ...(model.inbox
            ? [
                h(Text, { key: "inbox", bold: true }, `Inbox: ${model.inbox.count}`),
                ...model.inbox.latest.map((l, i) => h(Text, { key: `dm${i}`, wrap: "truncate-end" }, l)),
              ]
            : []),
        ),
        h(
          Box,
          { flexDirection: "column", flexGrow: 1, borderStyle: "single", paddingX: 1 },
          h(Text, null, ...tabs.map((t) => h(Text, { key: t, inverse: t === current }, ` ${t} `))),
          ...lines.map((l, i) => h(Text, { key: i, wrap: "truncate-end", dimColor: l.historical }, l.text)),
        ),
      ),
    );
  };

/** Run the terminal UI until q (or Ctrl-C). */
export async function runConsoleUi(s: MeshSession, o: { sinceMs: number; agents: string[]; channels: string[] }): Promise<void> {
  const log = cliLog("console");
  const model = new ConsoleModel(o.channels, o.agents);
  const feed = new ConsoleFeed(s, log, (item) => model.add(item));
  const roster = await s.roster();
  model.setRoster(roster.entries());
  const ink = await loadInk();
  // a / d answer the oldest open ask, as whoever the console reads as (the person at the mesh host, by default).
  const answer = (decision: "allow" | "deny") => {
    const ask = model.asks.list()[0];
    if (!ask) return model.setNotice("no open ask to answer");
    void answerApproval(s.nc, s.target.space, credsCaller(s.target.creds), ask, decision)
      .then((r) => model.setNotice(r.ok ? `${decision === "allow" ? "allowed" : "denied"} ${ask.id}` : `${ask.id}: ${r.code}: ${r.message}`))
      .catch((err: unknown) => model.setNotice(`${ask.id}: ${(err as Error).message}`));
  };
  const inbox = ConsoleInbox.of(s, (v) => model.setInbox(v), log);
  inbox?.start();
  const app = ink.render(ink.createElement(appOf(ink), { model, answer }), { exitOnCtrlC: false });
  const planes = o.agents.length ? o.agents.map((a) => eventsChannelOf(parsePrincipal(a))) : planesOf(roster.entries());
  await feed.add([...planes, ...o.channels], o.sinceMs);
  roster.onChange((entries) => {
    model.setRoster(entries);
    if (!o.agents.length) void feed.add(planesOf(entries), o.sinceMs).catch((err: unknown) => log.debug({ err }, "following a new plane failed"));
  });
  void s.nc.closed().then((err) => model.setStale(`connection closed${err ? `: ${err.message}` : ""}`));
  process.once("SIGTERM", () => app.unmount());
  await app.waitUntilExit();
  inbox?.close();
  feed.close();
  await s.close();
}
