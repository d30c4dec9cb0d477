import type { Command } from "commander";
import { hostname } from "node:os";
import { z } from "zod";
import type { Endpoint, RosterEntry } from "../../broker/index.js";
import { connectAs } from "../acting.js";
import { jsonOption, meshOptions, resolveTarget } from "../context.js";
import { EXIT } from "../errors.js";
import { actingIdentity } from "../acting-identity.js";
import { deliveryJson, formatDelivery, rosterJson } from "../format.js";
import { cliLog } from "../logging.js";
import { clock, note, oneLine, printJsonLine, printLines } from "../output.js";
import { actingName, channelName, parseInput, token } from "../validate.js";

const ListenFlags = z.object({
  as: actingName("--as name").optional(),
  impersonate: z.boolean().optional(),
  channel: z.array(channelName).default([]),
  role: token("name", "role").optional(),
  json: z.boolean().optional(),
});

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
    .option("--channel <name>", "join a channel (repeatable)", (v: string, prev: string[] = []) => [...prev, v])
    .option("--role <role>", "hold a role: receive anycasts to it");
  jsonOption(meshOptions(cmd)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(ListenFlags, raw, { as: "--as", channel: "--channel", role: "--role" });
    const target = resolveTarget(raw);
    const who = actingIdentity(target, f.as, f.impersonate);
    const ep = await connectAs(target, who.name, {
      ...(f.role ? { role: f.role } : {}),
      ...(who.impersonatedBy ? { impersonatedBy: who.impersonatedBy } : {}),
      description: "a person using cotal listen",
      meta: { connector: "cotal-cli", host: hostname() },
    });
    await listen(ep, f.channel, !!f.json);
  });
}

async function listen(ep: Endpoint, channels: string[], json: boolean): Promise<void> {
  const log = cliLog("listen", { me: ep.id });
  let stopping: Promise<void> | undefined;
  const stop = (code: number): Promise<void> =>
    (stopping ??= (async () => {
      await ep.close().catch((err) => log.warn({ err }, "leaving failed"));
      if (json) printJsonLine({ type: "left", as: ep.id });
      else note(`Left the mesh as ${ep.id}.`);
      process.exitCode = code;
    })());
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(sig, () => void stop(EXIT.ok));
  ep.nc.closed().then((err) => {
    if (err && !stopping) {
      log.error({ err }, "connection to the mesh closed");
      void stop(EXIT.unreachable);
    }
  });

  await ep.join();
  const roster = await ep.roster();
  const shown = new Map<string, string>();
  const showRoster = (entries: RosterEntry[]) => {
    const now = Date.now();
    for (const e of entries) {
      if (e.id === ep.id) continue;
      const key = `${e.status}|${e.presence.condition?.code ?? ""}|${e.presence.activity ?? ""}`;
      const before = shown.get(e.id);
      if (before === key || (before === undefined && e.status === "offline")) continue;
      shown.set(e.id, key);
      if (json) printJsonLine({ type: "roster", ...rosterJson(e, now) });
      else {
        const extra = [e.presence.condition?.code, e.presence.activity].filter(Boolean).map((s) => oneLine(s!)).join(", ");
        printLines(`${clock(now)} roster ${oneLine(e.name)}${e.role ? ` (${oneLine(e.role)})` : ""} is ${e.status}${extra ? `: ${extra}` : ""}`);
      }
    }
  };
  showRoster(roster.entries());
  roster.onChange(showRoster);

  const joined: Array<{ channel: string; class: string; backfilled: number }> = [];
  for (const channel of channels) joined.push({ channel, ...(await ep.joinChannel(channel)) });
  if (json) printJsonLine({ type: "ready", as: ep.id, space: ep.space, channels: joined });
  else note(`Listening as ${ep.id}${channels.length ? ` on ${channels.map((c) => `#${c}`).join(", ")}` : ""}; Ctrl-C to leave.`);

  for await (const d of ep.deliveries) {
    if (json) printJsonLine(deliveryJson(d));
    else printLines(formatDelivery(d));
    try {
      await d.ack();
    } catch (err) {
      log.warn({ err, id: d.message.id }, "ack failed; the broker will deliver it again");
    }
  }
  await stop(EXIT.ok);
}
