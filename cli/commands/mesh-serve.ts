import type { Command } from "commander";
import { z } from "zod";
import { AuthStore, connectMesh, MeshService, StorageLimitsInput, XferService } from "../../broker/index.js";
import { credsOption } from "../mesh-client/mesh-target.js";
import { EXIT } from "../terminal/errors.js";
import { cliLog, useServiceLogLevel } from "../terminal/logging.js";
import { parseInput, token } from "../terminal/validate.js";

const ServeFlags = z.object({
  server: z.string().min(1, "server is required"),
  space: token("space", "space"),
  creds: z.string().optional(),
  authDir: z.string().optional(),
  limits: z
    .string()
    .transform((s, ctx) => {
      try {
        return JSON.parse(s) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "--limits must be JSON" });
        return z.NEVER;
      }
    })
    .pipe(StorageLimitsInput)
    .optional(),
});

/**
 * `cotal mesh serve` (hidden): the mesh service process `cotal up` starts. Provisions the
 * space and serves the control rail until SIGTERM/SIGINT, then stops and drains.
 */
export function registerMeshServe(program: Command): void {
  const mesh = program.command("mesh", { hidden: true }).description("internal: processes started by `cotal up`");
  mesh
    .command("serve")
    .description("run the mesh service of one space until SIGTERM or SIGINT (started by `cotal up`)")
    .requiredOption("--server <url>", "server URL")
    .requiredOption("--space <name>", "space to serve")
    .addOption(credsOption())
    .option("--auth-dir <dir>", "static meshes: the .cotal/auth folder the service mints and revokes with")
    .option("--limits <json>", "storage limits to provision with (as `cotal up` writes them)")
    .action(async (raw: Record<string, unknown>) => {
      const f = parseInput(ServeFlags, raw);
      useServiceLogLevel();
      const log = cliLog("mesh-serve", { space: f.space });
      const nc = await connectMesh({ server: f.server, creds: f.creds, name: `cotal-mesh-service-${f.space}` });
      const svc = await MeshService.start(nc, f.space, {
        ...(f.limits ? { limits: f.limits } : {}),
        ...(f.authDir ? { auth: { store: await AuthStore.open(f.authDir), server: f.server } } : {}),
      });
      // Transcript carry's buckets (docs/manager.md "Transcript carry"): the operator's credential only.
      const xfer = await XferService.start(nc, f.space, log, { operatorOnly: f.authDir !== undefined });
      log.info({ server: f.server, pid: process.pid }, "mesh service running");
      const signal = await new Promise<string>((resolve) => {
        for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.once(sig, () => resolve(sig));
        void nc.closed().then((err) => resolve(err ? `connection closed: ${err.message}` : "connection closed"));
      });
      log.info({ signal }, "mesh service stopping");
      xfer.stop();
      await svc.stop().catch((err) => log.warn({ err }, "stop failed"));
      if (!nc.isClosed()) await nc.drain().catch(() => nc.close());
      log.info("mesh service stopped");
      process.exitCode = signal.startsWith("SIG") ? EXIT.ok : EXIT.failed;
    });
}
