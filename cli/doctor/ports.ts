// `cotal doctor`: the ports the mesh listens on are free for `cotal up`, or held by this mesh's
// own nats-server.
import { DEFAULT_PORT, portIsFree } from "../mesh-host/ports.js";
import { meshNodes } from "../mesh-host/cluster-nodes.js";
import type { MeshInfo, MeshRoot } from "../mesh-host/mesh-root.js";
import { isRunning, readRecord } from "../mesh-host/pid-file.js";
import { failed, pass, skipped, warned, type DoctorCheck } from "./check.js";

const ID = "ports";
const TITLE = "ports";

/** What `cotal up` does when a port is taken: listen on another (the client port without --port), or refuse. */
type WhenTaken = "moves" | "refuses";

/** A port of the mesh and the server process that should hold it. */
interface MeshPort {
  what: string;
  host: string;
  port: number;
  /** The pid file of the node that listens on it. */
  pidFile?: string;
  whenTaken: WhenTaken;
}

/**
 * Each port: free (ready for `cotal up`), held by this mesh's running server, or taken by
 * another program (a failure when `cotal up` would refuse to start; a warning when it would only
 * move the client port). A remote mesh's ports are its host's business: skipped.
 */
export async function portsCheck(root: MeshRoot | undefined, info: MeshInfo | undefined, remote: boolean): Promise<DoctorCheck> {
  if (remote) return skipped(ID, TITLE, "the mesh was named by --server/COTAL_SERVER: its ports are checked on its host.");
  const ports: MeshPort[] =
    root && info ? portsOf(root, info) : [{ what: "client port (the default)", host: "127.0.0.1", port: DEFAULT_PORT, whenTaken: "moves" }];
  const held: string[] = [];
  const free: string[] = [];
  const moved: string[] = [];
  const refused: string[] = [];
  const silent: string[] = [];
  for (const p of ports) {
    const rec = p.pidFile ? readRecord(p.pidFile) : undefined;
    const ours = rec && isRunning(rec) ? rec.pid : undefined;
    const name = `${p.what} ${p.host}:${p.port}`;
    const isFree = await portIsFree(p.host, p.port);
    if (ours !== undefined) {
      if (isFree) silent.push(`${name} (nats-server pid ${ours} runs, but nothing listens there)`);
      else held.push(`${name} (this mesh's nats-server, pid ${ours})`);
    } else if (isFree) free.push(name);
    else (p.whenTaken === "moves" ? moved : refused).push(name);
  }
  const found = [held.length ? `in use by this mesh: ${held.join(", ")}` : "", free.length ? `free: ${free.join(", ")}` : ""].filter(Boolean).join("; ");
  if (refused.length || silent.length)
    return failed(
      ID,
      TITLE,
      [
        refused.length ? `taken by another program: ${refused.join(", ")}, so \`cotal up\` would refuse to start` : "",
        silent.length ? silent.join(", ") : "",
        found,
      ]
        .filter(Boolean)
        .join("; ") + ".",
      refused.length
        ? "Stop the program holding it (`ss -ltnp` names it), or `cotal down` and choose other ports (`cotal up --leaf-port N`; a cluster's route ports are chosen again by a fresh `cotal up --cluster`)."
        : "Run `cotal down && cotal up -d` to restart the mesh's server, and `cotal logs nats-server` to see why it stopped listening.",
    );
  if (moved.length)
    return warned(
      ID,
      TITLE,
      `taken by another program: ${moved.join(", ")}; \`cotal up\` will listen on another port and record it in mesh.json${found ? `; ${found}` : ""}.`,
      "Nothing is needed on this host; hosts that were given the old address need the new one. To keep the port, stop the program holding it (`ss -ltnp` names it).",
    );
  return pass(ID, TITLE, `${found}.`);
}

/** Every port mesh.json gives the mesh: each node's client (and route) port, and its leaf listener. */
function portsOf(root: MeshRoot, info: MeshInfo): MeshPort[] {
  const nodes = meshNodes(root, info);
  return nodes.flatMap((n, i) => {
    const node = info.cluster?.nodes[i];
    const label = info.cluster ? `node ${n.index} ` : "";
    return [
      // A recorded client port is asked for again; when taken, `up` takes another (single server) or refuses (--port, a cluster's).
      { what: `${label}client port`, host: info.host, port: node?.port ?? info.port, pidFile: n.pidFile, whenTaken: info.cluster ? "refuses" : "moves" },
      ...(node ? [{ what: `${label}route port`, host: info.host, port: node.routePort, pidFile: n.pidFile, whenTaken: "refuses" as const }] : []),
      ...(info.leaf ? [{ what: `${label}leaf port`, host: info.leaf.host, port: info.leaf.port + i, pidFile: n.pidFile, whenTaken: "refuses" as const }] : []),
    ];
  });
}
