import { credsCaller, serverUrls } from "../../broker/index.js";
import { meshNodes } from "./cluster-nodes.js";
import type { MeshTarget } from "../mesh-client/mesh-target.js";
import { isRunning, readRecord } from "./pid-file.js";
import { pingMeshService, serverAnswers } from "./probe.js";
import { connectMesh } from "../../broker/index.js";

/**
 * `cotal status --components`: a health check per component for supervisors (systemd's
 * ExecStartPost/timers, container HEALTHCHECK, monitoring). Each failing component sets its own
 * bit in the exit code, above the CLI's other codes (0–6), so one number says which are down:
 *
 * | bit | component |
 * |---|---|
 * | 8  | nats-server (any node of a cluster) |
 * | 16 | the mesh service |
 * | 32 | the manager |
 *
 * 0: every checked component is healthy. A usage error still exits 2, an unreadable mesh 3.
 */
export const COMPONENT_BITS = { "nats-server": 8, "mesh-service": 16, manager: 32 } as const;
export type Component = keyof typeof COMPONENT_BITS;
export const COMPONENTS = Object.keys(COMPONENT_BITS) as Component[];

/** One component's health. */
export interface ComponentHealth {
  component: Component;
  /** A node of a cluster (`nats-server-n2`), or the component itself. */
  name: string;
  healthy: boolean;
  /** What was checked and what was seen, for people. */
  detail: string;
  pid?: number;
}

/** The report of `--components`, and the exit code it maps to. */
export interface ComponentsReport {
  checks: ComponentHealth[];
  exitCode: number;
}

/**
 * Check `which` components of the mesh `t` names. On the mesh host (a `.cotal/` root) a process
 * must be running by its pid file AND answer; elsewhere (a systemd host running the pieces
 * itself) only answers count: nats-server accepts a connection with the credential, the mesh
 * service answers a ping, a manager's heartbeat is current (`--instance` names which; the
 * operator's credential reads heartbeats).
 */
export async function checkComponents(t: MeshTarget, which: readonly Component[]): Promise<ComponentsReport> {
  const checks: ComponentHealth[] = [];
  const pidOf = (file: string) => {
    const rec = readRecord(file);
    return rec ? { pid: rec.pid, running: isRunning(rec) } : undefined;
  };
  if (which.includes("nats-server")) {
    const nodes = t.root && t.info ? meshNodes(t.root, t.info) : undefined;
    const urls = serverUrls(t.server);
    // Each node on its own URL: a cluster answering through another node must not hide a dead one.
    for (const [i, url] of urls.entries()) {
      const node = nodes?.[i];
      const proc = node ? pidOf(node.pidFile) : undefined;
      const answers = await serverAnswers({ server: url, creds: t.creds }, 2_000);
      const healthy = answers && (node === undefined || proc?.running === true);
      checks.push({
        component: "nats-server",
        name: node?.name ?? (urls.length > 1 ? `nats-server-n${i + 1}` : "nats-server"),
        healthy,
        detail: `${url} ${answers ? "answers" : "does NOT answer"}${node ? `; pid ${proc ? `${proc.pid} ${proc.running ? "running" : "NOT running"}` : "not recorded"}` : ""}`,
        ...(proc ? { pid: proc.pid } : {}),
      });
    }
  }
  const needsConnection = which.includes("mesh-service") || (which.includes("manager") && !t.root);
  const nc = needsConnection ? await connectMesh({ server: t.server, creds: t.creds, name: "cotal-health" }).catch(() => undefined) : undefined;
  try {
    if (which.includes("mesh-service")) {
      const proc = t.root ? pidOf(t.root.pidFile("mesh-service")) : undefined;
      const ping = nc ? await pingMeshService(nc, t.space, 2_000, credsCaller(t.creds)) : undefined;
      const healthy = ping !== undefined && (!t.root || proc?.running === true);
      checks.push({
        component: "mesh-service",
        name: "mesh-service",
        healthy,
        detail: `${ping ? `answers a ping (pid ${ping.pid})` : nc ? "does NOT answer a ping" : "the server cannot be reached"}${t.root ? `; pid ${proc ? `${proc.pid} ${proc.running ? "running" : "NOT running"}` : "not recorded"}` : ""}`,
        ...(ping ? { pid: ping.pid } : proc ? { pid: proc.pid } : {}),
      });
    }
    if (which.includes("manager")) {
      const proc = t.root ? pidOf(t.root.pidFile("manager")) : undefined;
      checks.push(
        t.root
          ? {
              component: "manager",
              name: "manager",
              healthy: proc?.running === true,
              detail: proc ? `pid ${proc.pid} ${proc.running ? "running" : "NOT running"}` : "not recorded (`cotal up` starts it)",
              ...(proc ? { pid: proc.pid } : {}),
            }
          : {
              component: "manager",
              name: "manager",
              healthy: nc !== undefined,
              detail: nc ? "the server answers (a manager elsewhere is checked on its own host)" : "the server cannot be reached",
            },
      );
    }
  } finally {
    await nc?.close().catch(() => undefined);
  }
  let exitCode = 0;
  for (const c of checks) if (!c.healthy) exitCode |= COMPONENT_BITS[c.component];
  return { checks, exitCode };
}
