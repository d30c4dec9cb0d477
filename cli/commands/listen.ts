import { AuthorizationError, UserAuthenticationExpiredError } from "@nats-io/transport-node";
import type { Command } from "commander";
import { hostname } from "node:os";
import { z } from "zod";
import type { Endpoint, Roster, RosterEntry } from "../../broker/index.js";
import { connectAs } from "../identity/connect-as.js";
import { jsonOption, meshOptions, resolveTarget } from "../mesh-client/mesh-target.js";
import { CommandFailedError, EXIT, requireProfile, SENDERS } from "../terminal/errors.js";
import { actingIdentity } from "../identity/acting-as.js";
import { credentialScope } from "../identity/credential-scope.js";
import { deliveryJson, formatDelivery, rosterJson } from "../terminal/format.js";
import { cliLog } from "../terminal/logging.js";
import { clock, note, oneLine, printJsonLine, printLines } from "../terminal/output.js";
import { repeatable, actingName, channelName, parseInput, token } from "../terminal/validate.js";

const ListenFlags = z.object({
  as: actingName("--as name").optional(),
  impersonate: z.boolean().optional(),
  channel: z.array(channelName).default([]),
  role: token("name", "role").optional(),
  takeover: z.boolean().optional(),
  json: z.boolean().optional(),
});

/** How long `listen` keeps retrying a lost connection before it leaves (exit 3). */
const RECONNECT_GRACE_MS = 10_000;

/** `cotal listen`: join as a person and print what arrives. */
export function registerListen(program: Command): void {
  const cmd = program
    .command("listen")
    .summary("join as a person and print roster changes, posts, DMs and anycasts live")
    .description(
      "Join the mesh as a person and print, one line each, roster changes, posts on the channels you name, your DMs " +
        "and anycasts to your role. Posts from before you joined are marked [history]. Each DM and anycast is " +
        "acknowledged only after it was printed, so one that was never printed is delivered again next time. " +
        "Ctrl-C leaves (you show as offline).",
    )
    .option("--as <name>", "who listens (default: the credential's own name)")
    .option("--impersonate", "with the operator's credential: listen as --as on purpose (its presence says so)")
    .option("--channel <name>", "join a channel (repeatable)", repeatable)
    .option("--role <role>", "hold a role: receive anycasts to it")
    .option("--takeover", "if this name is already listening elsewhere, take over: the other listen leaves");
  jsonOption(meshOptions(cmd)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(ListenFlags, raw, { as: "--as", channel: "--channel", role: "--role" });
    const target = resolveTarget(raw, undefined, f);
    requireProfile(target.creds, SENDERS, "join the mesh as someone (listen): it reads with `cotal history` and `cotal roster`");
    const who = await actingIdentity(target, f.as, f.impersonate);
    const since = String(Date.now());
    const ep = await connectAs(target, who.name, {
      ...(f.role ? { role: f.role } : {}),
      ...(who.impersonatedBy ? { impersonatedBy: who.impersonatedBy } : {}),
      // A person's credential holds no channel memberships: it reads every channel live (docs/security.md).
      ...(target.creds && credentialScope(target.creds)?.profile === "person" ? { liveChannels: true } : {}),
      description: "a person using cotal listen",
      meta: { connector: "cotal-cli", host: hostname(), [LISTEN_SINCE]: since },
    });
    await listen(ep, f.channel, !!f.json, { since, takeover: !!f.takeover, server: target.server });
  });
}

/** The card `meta` key a listener marks itself with (when it started, epoch ms): a newer one took over. */
const LISTEN_SINCE = "listenSince";

async function listen(ep: Endpoint, channels: string[], json: boolean, opts: { since: string; takeover: boolean; server: string }): Promise<void> {
  const log = cliLog("listen", { me: ep.id });
  // Two listeners of one name would split its DMs between them without a word: refuse, or take over on purpose.
  const before = (await ep.roster()).get(ep.id);
  if (before && before.status !== "offline" && !opts.takeover) {
    await ep.close().catch(() => undefined);
    throw new CommandFailedError(
      `${ep.id} is already listening${before.presence.card.meta?.host ? ` on ${before.presence.card.meta.host}` : ""}: a second listen would split its DMs with the first.`,
      {
        remedy: "Stop the other `cotal listen`, or pass --takeover to make it leave.",
      },
    );
  }
  let stopping: Promise<void> | undefined;
  const stop = (code: number): Promise<void> =>
    (stopping ??= (async () => {
      // Leaving is bounded: with the mesh gone there is nobody to tell.
      const left = ep.close().catch((err) => log.warn({ err }, "leaving failed"));
      await Promise.race([left, new Promise((r) => setTimeout(r, 5_000).unref())]);
      if (json) printJsonLine({ type: "left", as: ep.id });
      else note(`Left the mesh as ${ep.id}.`);
      process.exitCode = code;
    })());
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(sig, () => void stop(EXIT.ok));
  ep.nc.closed().then((err) => {
    if (err && !stopping) {
      // The server closes a revoked (or expired) credential's connection with an authorization error.
      const refused = err instanceof AuthorizationError || err instanceof UserAuthenticationExpiredError;
      note(
        refused ? `The mesh refused this credential (${ep.id}): it was revoked or it expired; leaving.` : `The connection to the mesh closed: ${err.message}`,
      );
      void stop(refused ? EXIT.authentication : EXIT.unreachable);
    }
  });
  void watchConnection(ep, opts.server, () => void stop(EXIT.unreachable));

  const joined: Array<{ channel: string; class: string; backfilled: number }> = [];
  let roster: Roster;
  try {
    await ep.join();
    roster = await ep.roster();
    for (const channel of channels) joined.push({ channel, ...(await ep.joinChannel(channel)) });
  } catch (err) {
    // A listen that could not join leaves no presence behind: otherwise its name shows online
    // until the liveness judge notices, and the next `listen` as it is refused as a second listener.
    await ep.close().catch((e: unknown) => log.warn({ err: e }, "leaving after a failed join failed"));
    throw err;
  }
  const shown = new Map<string, string>();
  const showRoster = (entries: RosterEntry[]) => {
    const now = Date.now();
    for (const e of entries) {
      if (e.id === ep.id) {
        const theirs = Number(e.presence.card.meta?.[LISTEN_SINCE] ?? 0);
        if (theirs > Number(opts.since) && e.status !== "offline" && !stopping) {
          note(`Another \`cotal listen --takeover\` now listens as ${ep.id}; leaving.`);
          void stop(EXIT.ok);
        } else if (theirs < Number(opts.since) && !stopping) {
          // The listener we took over from wrote last (its goodbye says offline): say we are here.
          void ep.setPresence({}).catch((err) => log.debug({ err }, "presence write after a takeover failed"));
        }
        continue;
      }
      const key = `${e.status}|${e.presence.condition?.code ?? ""}|${e.presence.activity ?? ""}`;
      const before = shown.get(e.id);
      if (before === key || (before === undefined && e.status === "offline")) continue;
      shown.set(e.id, key);
      if (json) printJsonLine({ type: "roster", ...rosterJson(e, now) });
      else {
        const extra = [e.presence.condition?.code, e.presence.activity]
          .filter(Boolean)
          .map((s) => oneLine(s!))
          .join(", ");
        printLines(`${clock(now)} roster ${oneLine(e.name)}${e.role ? ` (${oneLine(e.role)})` : ""} is ${e.status}${extra ? `: ${extra}` : ""}`);
      }
    }
  };
  if (json) printJsonLine({ type: "ready", as: ep.id, space: ep.space, channels: joined });
  else note(`Listening as ${ep.id}${channels.length ? ` on ${channels.map((c) => `#${c}`).join(", ")}` : ""}; Ctrl-C to leave.`);
  // Roster lines come after `ready`, so a reader knows the join finished before anything else.
  showRoster(roster.entries());
  roster.onChange(showRoster);

  for await (const d of ep.deliveries) {
    if (json) printJsonLine(deliveryJson(d));
    else printLines(formatDelivery(d));
    try {
      await d.ack();
    } catch (err) {
      log.warn({ err, id: d.message.id }, "ack not confirmed; a copy the broker hands out again is acked, not shown twice");
    }
  }
  await stop(EXIT.ok);
}

/**
 * One line when the connection drops and one when it is back; after RECONNECT_GRACE_MS without
 * the mesh (stopped by `cotal down`, say) `listen` says so and leaves, instead of retrying forever.
 */
async function watchConnection(ep: Endpoint, server: string, giveUp: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  for await (const s of ep.nc.status()) {
    if (s.type === "disconnect" && !timer) {
      note(`Lost the connection to the mesh at ${server}; retrying for ${RECONNECT_GRACE_MS / 1000} s (Ctrl-C to leave).`);
      timer = setTimeout(() => {
        note(`The mesh at ${server} did not come back (stopped with \`cotal down\`?); leaving. Run \`cotal status\` on the mesh host.`);
        giveUp();
      }, RECONNECT_GRACE_MS);
    } else if (s.type === "reconnect" && timer) {
      clearTimeout(timer);
      timer = undefined;
      note("Reconnected to the mesh.");
    }
  }
}
