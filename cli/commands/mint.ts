import { resolve } from "node:path";
import type { Command } from "commander";
import { z } from "zod";
import { existsSync } from "node:fs";
import {
  checkMintSpec,
  isPermissionDenied,
  LEAF_SUFFIX,
  MintRefusedError,
  PROFILES,
  requestCredential,
  requestRevoke,
  writeSecret,
} from "../../broker/index.js";
import { AgentFileError, personaDigests } from "../../runtimes/index.js";
import { AllowSpawn, ApproveRight, DEFAULT_SPAWN_LIMIT, eventPlaneOf, localPrincipal, principalId, SpawnLimit, withArticle } from "../../schemas/index.js";
import { jsonOption, meshOptions, resolveTarget, withMeshConnection, type MeshTarget } from "../mesh-client/mesh-target.js";
import { credentialScope } from "../identity/credential-scope.js";
import { ProfileRefusedError, requireProfile, UsageError } from "../terminal/errors.js";
import { cliLog } from "../terminal/logging.js";
import { printJson, printLines } from "../terminal/output.js";
import { actingName, channelName, duration, parseInput, token } from "../terminal/validate.js";

/** A comma-separated flag value as its items (unset: none). */
const commaList = z
  .string()
  .optional()
  .transform((s) =>
    s
      ? s
          .split(",")
          .map((x) => x.trim())
          .filter(Boolean)
      : [],
  );

const list = commaList.pipe(z.array(channelName));

const MintFlags = z
  .object({
    name: actingName("name"),
    profile: z.enum(
      PROFILES.filter((p) => p === "agent" || p === "reader" || p === "observer" || p === "person" || p === "admin" || p === "manager" || p === "leaf") as [
        "agent",
        "reader",
        "observer",
        "person",
        "admin",
        "manager",
        "leaf",
      ],
      {
        message: "profile must be agent, reader, observer, person, admin, manager or leaf",
      },
    ),
    allowSubscribe: list,
    allowPublish: list,
    role: token("name", "role").optional(),
    provision: z.boolean().optional(),
    events: z.boolean().optional(),
    allowSpawn: commaList.pipe(AllowSpawn),
    spawnLimit: z.coerce.number().pipe(SpawnLimit).optional(),
    steer: z.boolean().optional(),
    approve: commaList.pipe(ApproveRight),
    out: z.string().min(1).optional(),
    expiresIn: duration.optional(),
    replace: z.boolean().optional(),
    on: token("name", "host").optional(),
    json: z.boolean().optional(),
  })
  .superRefine((f, ctx) => {
    if (f.approve.length && f.profile !== "person")
      ctx.addIssue({
        code: "custom",
        path: ["approve"],
        message: `the approve right is a person's (--profile person), not ${withArticle(f.profile)}'s: a seat's spawner answers its helpers' asks as their owner`,
      });
    // An event plane named as a channel would mint a channel permission of that name, not the plane:
    // the credential could not write the plane, and nothing would say so until its seat's frames were refused.
    for (const ch of f.allowPublish) {
      const plane = eventPlaneOf(ch);
      if (!plane) continue;
      const own = `${plane.owner}.${plane.actor}` === principalId(localPrincipal(f.name));
      ctx.addIssue({
        code: "custom",
        path: ["allowPublish"],
        message: own
          ? `${ch} is ${f.name}'s event plane, not a channel: pass --events instead (\`cotal mint ${f.name} --profile agent --events\`), which lets it publish its own plane`
          : `${ch} is the event plane of ${plane.owner}.${plane.actor}, not a channel: a credential may publish only its own event plane, with --events`,
      });
    }
  });

/** `cotal mint` and `cotal revoke`: credentials of a static mesh. */
export function registerMint(program: Command): void {
  const mint = program
    .command("mint <name>")
    .summary("write a credential (.creds) for an agent, a person, a reader, an observer or an admin")
    .description(
      "Ask the mesh service (the only minter) for a credential and write it as a .creds file (mode 0600). The key " +
        "pair is generated here: its seed never crosses the network. Profiles: agent (publishes only as itself, on " +
        "--allow-publish channels; reads --allow-subscribe channels and its own DMs), reader (a scoped reader: reads " +
        "its --allow-subscribe channels and event planes, history and the roster; publishes nothing, no DMs), observer " +
        "(reads every channel and presence; no DMs, no publish), person (someone who uses the mesh: posts on every channel, " +
        "DMs and anycasts as itself; reads every channel and event plane and its own DMs; its DM inbox is made at once), " +
        "admin (reads everything, publishes nothing).\n\n" +
        "A scoped reader of one agent's activity and #general: cotal mint watcher --profile reader --allow-subscribe 'events.local.<actor>,general' --provision",
    )
    .requiredOption(
      "--profile <profile>",
      "agent | person (someone who uses the mesh) | reader (a scoped reader) | observer | admin | manager (a manager on another host) | leaf (a leaf-node host's nats-server)",
    )
    .option("--allow-subscribe <channels>", "agent, reader: comma-separated channels (or event planes events.<owner>.<actor>) it may read")
    .option("--allow-publish <channels>", "agent: comma-separated channels it may post on")
    .option("--role <role>", "agent: the role whose anycasts it may take")
    .option("--provision", "create its DM inbox (and role queue, channel memberships) now, so it can bind at once; a reader: its channel memberships only")
    .option("--events", "agent: it runs a seat, so it may publish its own event plane (default: only if it has --allow-publish)")
    .option("--no-events", "agent: it may not publish its event plane, even with --allow-publish")
    .option(
      "--allow-spawn <personas>",
      "agent: comma-separated personas (agent files) it may spawn helpers of with cotal_spawn, never wider than itself (docs/manager.md, Helpers)",
    )
    .option("--spawn-limit <n>", "agent with --allow-spawn: helpers it may hold at once (default 4, at most 32)")
    .option("--steer", "person: may steer seats from `cotal web` (spawn personas and team seats, stop and restart seats)")
    .option(
      "--approve <seats>",
      "person: comma-separated seats (actor names) whose permission asks it may answer with `cotal approve`/`deny`, or '*' for every seat (docs/security.md, The approve right)",
    )
    .option("--out <file>", "where to write the .creds file (default .cotal/creds/<name>.creds next to the mesh)")
    .option("--expires-in <duration>", "expiry: a number and a unit, e.g. 90s, 24h or 7d (default: no expiry)")
    .option("--replace", "the name already has a credential: revoke every old one, then write the new one")
    .option(
      "--on <host>",
      "agent, reader, observer: it runs on the leaf host <host> (whose leaf credential is <host>_leaf): that host's connection may then act as it (docs/remote-hosts.md)",
    );
  jsonOption(meshOptions(mint)).action(async (name: string, raw: Record<string, unknown>) => {
    const f = parseInput(MintFlags, { ...raw, name }, { name: "<name>" });
    // Refused here, as bad input (exit 2), what the mesh service would refuse.
    try {
      checkMintSpec({
        space: "-",
        who: localPrincipal(f.name),
        profile: f.profile,
        allowSubscribe: f.allowSubscribe,
        allowPublish: f.allowPublish,
        ...(f.role ? { role: f.role } : {}),
        ...(f.events !== undefined ? { events: f.events } : {}),
        ...(f.allowSpawn.length ? { allowSpawn: f.allowSpawn } : {}),
        ...(f.spawnLimit !== undefined ? { spawnLimit: f.spawnLimit } : {}),
        ...(f.steer ? { steer: true } : {}),
      });
    } catch (err) {
      if (err instanceof MintRefusedError) throw new UsageError(`Invalid input: ${err.message}`);
      throw err;
    }
    if (f.on && f.profile !== "agent" && f.profile !== "reader" && f.profile !== "observer")
      throw new UsageError(`Invalid input: ${withArticle(f.profile)} does not run on a leaf host: --on applies to agents, readers and observers.`, {
        remedy: "Leave --on out; a leaf host's manager is minted as `<host> --profile manager`, its leaf connection as `<host>_leaf --profile leaf`.",
      });
    const target = resolveTarget(raw);
    const pinned = f.allowSpawn.length ? pinPersonas(target.root?.project ?? process.cwd(), f.allowSpawn) : undefined;
    const out = f.out ? resolve(f.out) : target.root ? resolve(target.root.dir, "creds", `${f.name}.creds`) : resolve(`${f.name}.creds`);
    // Minting again must not leave the old credential valid behind a silently overwritten file.
    if (existsSync(out) && !f.replace) {
      throw new UsageError(`${out} already holds a credential; minting ${f.name} again would leave the old one valid.`, {
        remedy: `Pass --replace to revoke every old credential of ${f.name} and write a new one, or --out another file.`,
      });
    }
    const replaced = f.replace
      ? await asMinter(target, "revoke", () => withMeshConnection(target, "cotal-cli", (nc) => requestRevoke(nc, target.space, f.name)))
      : undefined;
    const { reply, creds } = await asMinter(target, "mint", () =>
      withMeshConnection(target, "cotal-cli", (nc) =>
        requestCredential(nc, target.space, {
          name: f.name,
          profile: f.profile,
          allowSubscribe: f.allowSubscribe,
          allowPublish: f.allowPublish,
          ...(f.role ? { role: f.role } : {}),
          // A person's DM inbox exists from the start, so mail to them waits for their first `cotal inbox`.
          provision: !!f.provision || f.profile === "person",
          ...(f.events !== undefined ? { events: f.events } : {}),
          ...(f.allowSpawn.length ? { allowSpawn: f.allowSpawn } : {}),
          ...(f.spawnLimit !== undefined ? { spawnLimit: f.spawnLimit } : {}),
          ...(f.approve.length ? { approve: f.approve } : {}),
          ...(pinned ? { personaDigests: pinned } : {}),
          ...(f.steer ? { steer: true } : {}),
          ...(f.expiresIn ? { expiresInMs: f.expiresIn } : {}),
          ...(f.on ? { leaf: `${f.on}${LEAF_SUFFIX}` } : {}),
        }),
      ),
    );
    writeSecret(out, creds);
    const result = {
      principal: reply.principal,
      profile: f.profile,
      ...(f.allowSpawn.length ? { allowSpawn: f.allowSpawn, spawnLimit: f.spawnLimit ?? DEFAULT_SPAWN_LIMIT } : {}),
      ...(f.steer ? { steer: true } : {}),
      ...(f.approve.length ? { approve: f.approve } : {}),
      creds: out,
      expiresAt: reply.expiresAt ? new Date(reply.expiresAt).toISOString() : null,
      provisioned: !!reply.provisioned,
      revoked: replaced?.revoked ?? 0,
      othersValid: reply.othersValid ?? 0,
      ...(f.on ? { on: f.on } : {}),
    };
    const memberships = f.allowSubscribe.filter((ch) => !eventPlaneOf(ch));
    if (f.json) printJson(result);
    else
      printLines(
        `principal: ${result.principal} (${f.profile})`,
        `creds:     ${out} (mode 0600)`,
        ...(result.expiresAt ? [`expires:   ${result.expiresAt}`] : []),
        ...(f.allowSpawn.length ? [`spawns:    ${f.allowSpawn.join(", ")} (at most ${f.spawnLimit ?? DEFAULT_SPAWN_LIMIT} helpers at once)`] : []),
        ...(f.steer ? ["steers:    may spawn personas and team seats, stop and restart seats"] : []),
        ...(f.approve.length
          ? [`approves:  ${f.approve.includes("*") ? "every seat's permission asks" : `the permission asks of ${f.approve.join(", ")}`}`]
          : []),
        ...(f.on
          ? [`on:        leaf host ${f.on} (its connection to the mesh may act as ${result.principal}; revoking ${f.on}${LEAF_SUFFIX} revokes it too)`]
          : []),
        ...(result.provisioned ? ["inbox:     provisioned"] : []),
        // A reader has no inbox: provisioning made its channel memberships only (an event plane has none).
        ...(f.profile === "reader" && f.provision && memberships.length ? [`joined:    ${memberships.join(", ")} (durable memberships)`] : []),
        ...(replaced ? [`replaced:  revoked ${replaced.revoked} old credential${replaced.revoked === 1 ? "" : "s"} of ${result.principal}`] : []),
        ...(result.othersValid
          ? [
              `note:      ${result.othersValid} earlier credential${result.othersValid === 1 ? "" : "s"} of ${result.principal} stay${result.othersValid === 1 ? "s" : ""} valid (\`cotal mint ${f.name} --replace\` or \`cotal revoke ${f.name}\` ends them)`,
            ]
          : []),
      );
  });

  const revoke = program
    .command("revoke <name>")
    .summary("revoke every credential of a name: live connections are cut, new ones refused")
    .description("Revoke every credential minted for <name> on the running server, without a restart.");
  jsonOption(meshOptions(revoke)).action(async (name: string, raw: Record<string, unknown>) => {
    const f = parseInput(z.object({ name: actingName("name"), json: z.boolean().optional() }), { ...raw, name }, { name: "<name>" });
    const target = resolveTarget(raw);
    const r = await asMinter(target, "revoke", () => withMeshConnection(target, "cotal-cli", (nc) => requestRevoke(nc, target.space, f.name)));
    if (r.revoked === 0) throw new UsageError(`No credential was ever minted for ${r.principal}.`, { remedy: "Check the name (`cotal roster`)." });
    if (f.json) printJson(r);
    else printLines(`revoked ${r.revoked} credential${r.revoked === 1 ? "" : "s"} of ${r.principal}`);
  });
}

/** A broker permission refusal anywhere in an error's cause chain. */
function deniedSomewhere(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) if (isPermissionDenied(e)) return true;
  return false;
}

const ONLY_OPERATOR = (what: string) => `${what} (only the mesh host's operator credential can; run \`cotal ${what}\` there, without --creds or COTAL_CREDS)`;

/**
 * Run a mint or revoke; a credential whose profile may not do it (an agent's, an observer's)
 * is told so before anything is sent, or, should the broker refuse it, instead of the raw refusal.
 */
async function asMinter<T>(target: MeshTarget, what: "mint" | "revoke", fn: () => Promise<T>): Promise<T> {
  requireProfile(target.creds, ["operator"], ONLY_OPERATOR(what));
  try {
    return await fn();
  } catch (err) {
    if (!deniedSomewhere(err)) throw err;
    cliLog("mint").debug({ err }, `${what} refused by the broker`);
    throw new ProfileRefusedError(target.creds ? credentialScope(target.creds) : undefined, ONLY_OPERATOR(what));
  }
}

/**
 * The spawn right pins each persona's agent file as it is at mint, in the folder the mesh host's
 * manager reads them from (the mesh's project): a spawner that can write them cannot widen its
 * helpers later. A persona without a valid agent file there is refused as bad input.
 */
function pinPersonas(folder: string, personas: readonly string[]): Record<string, string> {
  try {
    return personaDigests(folder, personas);
  } catch (err) {
    if (!(err instanceof AgentFileError)) throw err;
    throw new UsageError(`Invalid input: --allow-spawn pins each persona's agent file as it is now, and ${err.message}`, {
      remedy: `Write the persona's agent file (.cotal/agents/<persona>.md in ${folder}) first, then mint; minting again later pins the file as it is then.`,
      cause: err,
    });
  }
}
