import { randomUUID } from "node:crypto";
import { z } from "zod";
import { Endpoint, verifyEnvelope, type Content, type Delivery, type Logger } from "../broker/index.js";
import { dmSubject, encodeMessage, messageText, principalId, type CotalMessage, type LaunchMaterial } from "../schemas/index.js";

/**
 * A message carrying a data part of this media type asks the echo seat to say, in a data part of
 * its answer, which process was handed it (EchoProbeReport): the fault suite's proof of who was
 * handed what (testbed/faults). Other messages get the text answer alone.
 */
export const ECHO_PROBE_MEDIA_TYPE = "application/vnd.cotal.echo-probe+json";
export const EchoProbeReport = z.object({
  /** The seat process that was handed the message. */
  pid: z.number().int().positive(),
  /** When it was handed it, epoch ms. */
  handedAt: z.number(),
  /** The delivery was flagged as a possible repeat. */
  possibleRepeat: z.boolean(),
});
export type EchoProbeReport = z.infer<typeof EchoProbeReport>;

/**
 * The built-in echo agent (for demos, tests and benchmarks without a model): joins with its
 * launch material and answers every DM and anycast with a DM back to the sender, `echo: <text>`.
 * Resolves when `stop` resolves (the process's SIGTERM), after leaving the mesh.
 */
export async function runEchoAgent(m: LaunchMaterial, log: Logger, stop: Promise<unknown>): Promise<void> {
  const loaded = performance.now();
  const ep = await Endpoint.connect({
    server: m.server,
    space: m.space,
    name: m.name,
    owner: m.owner,
    ...(m.role ? { role: m.role } : {}),
    ...(m.creds ? { creds: m.creds } : {}),
    ...(m.uid ? { lifecycleUid: m.uid } : {}),
    kind: "agent",
    runtime: m.runtime ?? "echo",
    description: m.description ?? "echo agent: answers DMs and anycasts with the same text",
    meta: { connector: "cotal-echo", ...(m.meta ?? {}) },
  });
  try {
    const connected = performance.now();
    await ep.join();
    for (const ch of m.channels) await ep.joinChannel(ch);
    warmUp(ep, log);
    log.info({ seat: ep.id, uid: m.uid, startup: startupPhases(loaded, connected, performance.now()) }, "echo agent joined");
    const answering = answer(ep, log);
    await stop;
    ep.stopConsuming();
    await answering.catch(() => undefined);
  } finally {
    await ep.close();
  }
}

/**
 * Run what a DM's echo runs, once, at start, on a DM that is never sent: its subject parsed, its
 * envelope decoded and checked against the sender, its echo built and checked. Otherwise a seat's
 * first DM compiles all of it while the sender waits; and the code cache the first seat writes at
 * its exit (cli/code-cache.ts) holds only what that seat ran, so every later seat compiled it again.
 */
function warmUp(ep: Endpoint, log: Logger): void {
  const probe: CotalMessage = {
    id: randomUUID(),
    ts: Date.now(),
    space: ep.space,
    from: { id: ep.id, name: ep.me.actor },
    to: ep.id,
    parts: [{ kind: "text", text: "warm-up" }],
  };
  const v = verifyEnvelope(dmSubject(ep.space, ep.me, ep.me), encodeMessage(probe), log);
  if (v)
    encodeMessage({
      ...probe,
      id: randomUUID(),
      to: principalId(v.from),
      parts: [{ kind: "text", text: `echo: ${messageText(v.message)}` }],
      replyTo: probe.id,
    });
}

async function answer(ep: Endpoint, log: Logger): Promise<void> {
  for await (const d of ep.deliveries) await echo(ep, d, log);
}

async function echo(ep: Endpoint, d: Delivery, log: Logger): Promise<void> {
  if (d.kind === "channel") return d.ack();
  const text = `echo: ${messageText(d.message)}`;
  const probed = d.message.parts.some((p) => p.kind === "data" && (p as { mediaType?: string }).mediaType === ECHO_PROBE_MEDIA_TYPE);
  const report: EchoProbeReport = { pid: process.pid, handedAt: Date.now(), possibleRepeat: d.possibleRepeat };
  log.debug({ id: d.message.id, repeat: d.possibleRepeat }, "echo handed");
  const answer: Content = probed
    ? [
        { kind: "text", text },
        { kind: "data", mediaType: ECHO_PROBE_MEDIA_TYPE, data: report },
      ]
    : text;
  try {
    await ep.dm(principalId(d.from), answer, { replyTo: d.message.id });
    await d.ack();
  } catch (err) {
    log.warn({ err, id: d.message.id }, "echo failed; the message will be redelivered");
    d.nak(1_000);
  }
}

/**
 * Where a seat's start went, ms (logged with "echo agent joined"; bench-manager reads it):
 * `startedAt` the process's start (epoch ms), `boot` Node's own bootstrap, `load` evaluating the
 * bundle, `connect` the NATS connection and bucket handles, `join` registering, presence, the roster
 * and binding the inbox (and the channels of the launch material).
 */
export interface StartupPhases {
  startedAt: number;
  boot: number;
  load: number;
  connect: number;
  join: number;
}

function startupPhases(loaded: number, connected: number, joined: number): StartupPhases {
  const boot = performance.nodeTiming.bootstrapComplete;
  const ms = (v: number) => Math.round(v * 10) / 10;
  return { startedAt: performance.timeOrigin, boot: ms(boot), load: ms(loaded - boot), connect: ms(connected - loaded), join: ms(joined - connected) };
}
