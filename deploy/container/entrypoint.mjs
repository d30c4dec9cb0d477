// The image's entrypoint (runs as the non-root user `cotal`): `cotal <args>` as a child process,
// preceded by a local nats-server when this host is a leaf node of a hub.
//
//   docker run cotal:local manager                  # cotal manager (COTAL_SERVER, COTAL_CREDS, COTAL_SPACE)
//   docker run -e COTAL_LEAF_CONF=/etc/cotal/leaf.conf … cotal:local manager
//                                                   # nats-server -c leaf.conf first, then the manager
//   docker kill --signal HUP <container>            # the leaf server reloads leaf.conf
//
// A child, not an import: the manager starts its seats from the bundles beside its own
// (`echo-seat.mjs`, else `node <argv[1]> agent …`), so argv[1] must be a cotal bundle. The mesh
// service and the manager run from the services' bundle with their V8 flag, as `cotal up` starts
// them (SERVICE_NODE_FLAGS in cli/mesh-host/service-process.ts; test/containers/image.test.ts checks both);
// every other command from the CLI's. Scratch images have no shell and no init, so this process
// also forwards SIGTERM/SIGINT to its children and reaps them.
import { spawn } from "node:child_process";

const COTAL = "/opt/cotal/dist/cotal.mjs";
const SERVICE = "/opt/cotal/dist/cotal-service.mjs";
const SERVICE_NODE_FLAGS = ["--max-semi-space-size=2"];
const NATS = "/usr/sbin/nats-server";
const children = new Set();

function start(cmd, args) {
  const child = spawn(cmd, args, { stdio: ["ignore", "inherit", "pipe"] });
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

function stopAll(signal) {
  for (const c of children) c.kill(signal);
}

for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => stopAll(sig));
// SIGHUP (`docker kill --signal HUP <container>`) reloads the leaf server's config, e.g. one
// rendered again after a `cotal revoke` on the mesh. It is not passed to cotal: the manager
// treats SIGHUP as stop.
let leafServer;
process.on("SIGHUP", () => leafServer?.kill("SIGHUP"));

async function startLeaf(conf) {
  const server = start(NATS, ["-c", conf]);
  leafServer = server;
  // "Server is ready" is nats-server's own line once every listener is up.
  await new Promise((resolve, reject) => {
    let seen = "";
    server.stderr.on("data", (b) => {
      process.stderr.write(b);
      if (seen !== null) {
        seen += b.toString();
        if (seen.includes("Server is ready")) {
          seen = null;
          resolve();
        }
      }
    });
    server.once("exit", (code, sig) => reject(new Error(`nats-server exited (${sig ?? code}) before it was ready`)));
  });
  server.once("exit", (code, sig) => {
    process.stderr.write(`entrypoint: the leaf nats-server exited (${sig ?? code}); stopping\n`);
    stopAll("SIGTERM");
    process.exitCode = 1;
  });
}

const leaf = process.env.COTAL_LEAF_CONF;
if (leaf) await startLeaf(leaf);
const args = process.argv.slice(2);
const service = args[0] === "manager" || (args[0] === "mesh" && args[1] === "serve");
const cotal = start(process.execPath, service ? [...SERVICE_NODE_FLAGS, SERVICE, ...args] : [COTAL, ...args]);
cotal.stderr.pipe(process.stderr);
cotal.once("exit", (code, sig) => {
  process.exitCode = process.exitCode || (code ?? (sig ? 128 : 1));
  stopAll("SIGTERM");
});
