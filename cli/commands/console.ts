import type { Command } from "commander";
import { z } from "zod";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { connectMesh, requestCredential, writeSecret, type RosterEntry } from "../../broker/index.js";
import { eventsChannelOf, parsePrincipal } from "../../schemas/index.js";
import { ConsoleFeed, FrameRenderer, plainLines, planesOf, type FeedItem } from "../console/console-feed.js";
import { ConsoleInbox, inboxCountLine } from "../console/console-inbox.js";
import { meshOptions, resolveTarget, type MeshTarget } from "../mesh-client/mesh-target.js";
import { credentialScope } from "../identity/credential-scope.js";
import { cliLog } from "../terminal/logging.js";
import { clock, note, oneLine, printLines } from "../terminal/output.js";
import { MeshSession } from "../mesh-client/session.js";
import { repeatable, actingName, channelName, duration, parseInput } from "../terminal/validate.js";

const ConsoleFlags = z.object({
  plain: z.boolean().optional(),
  since: duration.default(60 * 60 * 1000),
  agent: z.array(actingName("--agent name")).default([]),
  channel: z.array(channelName).default([]),
});

/** `cotal console`: the roster, every agent's activity (its event plane) and chosen channels, history first, then live. */
export function registerConsole(program: Command): void {
  const cmd = program
    .command("console")
    .summary("watch the agents: roster, their activity (event planes) and channels, history then live")
    .description(
      "Show the roster (status, condition, activity, unread, since) and what each agent does — turns, what it says, " +
        "tool calls starting and ending, read from its event plane events.<owner>.<actor> — plus the posts of the " +
        "channels you name: first what was stored since --since (marked [history]), then live. It reads with the " +
        "credential you give (a scoped reader sees only its planes). As a person (the default in the mesh folder) it " +
        "also shows your own inbox: the unread count and each DM to you, left unread. --plain, or a stdout that " +
        "is not a terminal, prints one line per item; otherwise a terminal UI opens (q quits).",
    )
    .option("--plain", "one line per item instead of the terminal UI")
    .option("--since <duration>", "how far back history reaches, e.g. 30m, 1h, 7d", "1h")
    .option("--agent <name>", "only this agent's activity (repeatable; default every agent on the roster)", repeatable)
    .option("--channel <name>", "also show this channel's posts (repeatable)", repeatable);
  meshOptions(cmd).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(ConsoleFlags, raw, { since: "--since", agent: "--agent", channel: "--channel" });
    const target = await observerByDefault(resolveTarget(raw, undefined, {}), raw.creds === undefined);
    const s = await MeshSession.open(target);
    const plain = f.plain || !process.stdout.isTTY;
    if (!plain) {
      const { runConsoleUi } = await import("../console/console-ui.js");
      await runConsoleUi(s, { sinceMs: Date.now() - f.since, agents: f.agent, channels: f.channel });
      return;
    }
    await runPlain(s, f);
  });
}

/** The observer credential the console keeps next to the mesh (minted once, on the mesh host). */
const CONSOLE_OBSERVER = "console";

/**
 * On the mesh host, with no --creds, the console reads as an observer (every channel and plane,
 * no DMs), not with the operator's own credential: minted once into `.cotal/creds/console.creds`.
 */
async function observerByDefault(target: MeshTarget, defaulted: boolean): Promise<MeshTarget> {
  if (!defaulted || !target.root || !target.creds || credentialScope(target.creds)?.profile !== "operator") return target;
  const file = resolve(target.root.dir, "creds", `${CONSOLE_OBSERVER}.creds`);
  if (!existsSync(file) || credentialScope(file)?.profile !== "observer") {
    const nc = await connectMesh({ server: target.server, creds: target.creds, name: "cotal-console-mint" });
    try {
      const { creds } = await requestCredential(nc, target.space, {
        name: CONSOLE_OBSERVER,
        profile: "observer",
        allowSubscribe: [],
        allowPublish: [],
        provision: false,
      });
      writeSecret(file, creds);
    } finally {
      await nc.close().catch(() => undefined);
    }
  }
  return { ...target, creds: file };
}

/**
 * A roster line: name, status (condition), the agent CLI it runs, activity, unread, since. Liveness is the status: a seat
 * that went quiet is offline once the mesh service's liveness judge deleted its key (SPEC §5);
 * a record's age says nothing, as records are written only when they change.
 */
export function rosterLine(e: RosterEntry): string {
  const p = e.presence;
  const status = p.condition && e.status !== "offline" ? `${e.status} (${p.condition.code})` : e.status;
  const bits = [
    p.card.runtime ? `runs ${oneLine(p.card.runtime)}` : "",
    p.activity ? `doing ${oneLine(p.activity)}` : "",
    p.unread !== undefined && e.status !== "offline" ? `${p.unread} unread` : "",
    p.statusSince ? `since ${clock(p.statusSince)}` : "",
  ].filter(Boolean);
  return `roster ${oneLine(e.name)}${e.role ? ` (${oneLine(e.role)})` : ""} ${status}${bits.length ? `, ${bits.join(", ")}` : ""}`;
}

async function runPlain(s: MeshSession, f: z.infer<typeof ConsoleFlags>): Promise<void> {
  const log = cliLog("console");
  const renderer = new FrameRenderer();
  const feed = new ConsoleFeed(s, log, (item: FeedItem) => printLines(...plainLines(item, renderer)));
  const roster = await s.roster();
  const shown = new Map<string, string>();
  const showRoster = (entries: RosterEntry[]) => {
    for (const e of entries) {
      const line = rosterLine(e);
      if (shown.get(e.id) === line.replace(/since \S+/, "")) continue;
      shown.set(e.id, line.replace(/since \S+/, ""));
      printLines(line);
    }
  };
  showRoster(roster.entries());
  const planes = f.agent.length ? f.agent.map((a) => eventsChannelOf(parsePrincipal(a))) : planesOf(roster.entries());
  const sinceMs = Date.now() - f.since;
  await feed.add([...planes, ...f.channel], sinceMs);
  note(`Live from here${feed.refused.size ? ` (not readable with this credential: ${[...feed.refused].join(", ")})` : ""}; Ctrl-C to leave.`);
  const inbox = ConsoleInbox.of(s, (v) => printLines(inboxCountLine(v), ...v.fresh.map((l) => `inbox ${l}`)), log);
  inbox?.start();
  roster.onChange((entries) => {
    showRoster(entries);
    // A new agent on the roster: follow its plane too (unless --agent chose the planes).
    if (!f.agent.length) void feed.add(planesOf(entries), sinceMs).catch((err: unknown) => log.debug({ err }, "following a new plane failed"));
  });
  let closed = false;
  s.nc.closed().then((err) => {
    if (!closed) note(`[stale] The connection to the mesh closed${err ? `: ${err.message}` : ""}; what is shown is no longer live.`);
  });
  await new Promise<void>((resolve) => {
    for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(sig, () => resolve());
  });
  closed = true;
  inbox?.close();
  feed.close();
  await s.close();
}
