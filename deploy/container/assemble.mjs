#!/usr/bin/env node
// Assembles a docker build context for Cotal's images without any image registry: the images
// are FROM scratch and hold this machine's own binaries (node, nats-server) plus exactly the
// shared libraries `ldd` lists for them, at the same paths. Usage:
//
//   node deploy/container/assemble.mjs <out-dir> [--image cotal|nats] [--nats-server PATH] [--node PATH]
//   docker build -t cotal:local <out-dir>
//
// `cotal` (default): node + nats-server + Cotal's bundles (dist/cotal.*, cotal-service.*, echo-seat.mjs, plugin/) under
// /opt/cotal, a non-root user `cotal` (uid 10001), entrypoint deploy/container/entrypoint.mjs.
// `nats`: nats-server alone (a cluster node or a hub), running as uid 10001, store in /data.
// Prints a JSON line {dir, image, hash}: the hash covers every byte that goes into the image, so
// a caller can tag by it and skip a build whose image already exists.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const UID = 10001;

function usage(msg) {
  process.stderr.write(`${msg}\nusage: node deploy/container/assemble.mjs <out-dir> [--image cotal|nats] [--nats-server PATH] [--node PATH]\n`);
  process.exit(2);
}

function which(name, fallbacks) {
  for (const dir of [...(process.env.PATH ?? "").split(":"), ...fallbacks]) {
    const p = join(dir, name);
    if (dir && existsSync(p)) return realpathSync(p);
  }
  return undefined;
}

/** The absolute library paths `ldd` prints for a binary (the vdso has none and is skipped). */
function libraries(bin) {
  const out = execFileSync("ldd", [bin], { encoding: "utf8" });
  const libs = [];
  for (const line of out.split("\n")) {
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m) libs.push(m[1]);
  }
  return libs;
}

const args = process.argv.slice(2);
const out = args.find((a, i) => !a.startsWith("--") && !(args[i - 1] ?? "").startsWith("--"));
if (!out) usage("missing <out-dir>");
const flag = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const image = flag("--image") ?? "cotal";
if (image !== "cotal" && image !== "nats") usage(`unknown image ${image}`);
const natsBin =
  flag("--nats-server") ??
  process.env.NATS_SERVER_BIN ??
  which("nats-server", ["/usr/sbin", "/usr/local/bin", join(process.env.HOME ?? "/nonexistent", ".local/share/cotal/bin")]);
if (!natsBin) usage("nats-server not found: install nats-server 2.10 or newer (docs/setup.md) or pass --nats-server");
// Images carry nats-server >= 2.10 only: 2.9 can be crashed by one message from any credential and
// acknowledges writes before they are on disk (docs/security.md "Supported servers").
const natsVersion = /v(\d+)\.(\d+)\./.exec(execFileSync(natsBin, ["--version"], { encoding: "utf8" }));
if (!natsVersion || Number(natsVersion[1]) < 2 || (Number(natsVersion[1]) === 2 && Number(natsVersion[2]) < 10))
  usage(`${natsBin} is ${natsVersion ? natsVersion[0] : "of no known version"}: the images need nats-server 2.10 or newer (pass --nats-server PATH)`);
const nodeBin = flag("--node") ?? process.execPath;

/** Every file of the image: path inside the image → path on this machine (or literal bytes). */
const files = new Map();
const addBinary = (bin, at) => {
  files.set(at, realpathSync(bin));
  for (const lib of libraries(bin)) files.set(lib, realpathSync(lib));
};
addBinary(natsBin, "/usr/sbin/nats-server");
// nsswitch-free name lookups: a scratch image has no /etc/hosts beyond what docker mounts, and
// Go's resolver (nats-server) and node both read /etc/hosts and /etc/resolv.conf, which docker
// provides at run time.
files.set("/etc/passwd", Buffer.from(`root:x:0:0:root:/root:/nonexistent\ncotal:x:${UID}:${UID}:cotal:/home/cotal:/nonexistent\n`));
files.set("/etc/group", Buffer.from(`root:x:0:\ncotal:x:${UID}:\n`));

if (image === "cotal") {
  addBinary(nodeBin, "/usr/local/bin/node");
  // The CLI, the services' bundle (mesh service, manager) and the echo seat's, beside each other:
  // the CLI's and the services' are launchers of CommonJS bundles (scripts/build.mjs).
  const bundles = [
    "dist/cotal.mjs",
    "dist/cotal.cjs",
    "dist/cotal-service.mjs",
    "dist/cotal-service.cjs",
    "dist/code-cache.mjs",
    "dist/console-ink.mjs",
    "dist/echo-seat.mjs",
    "dist/echo-seat.cjs",
  ];
  const need = [...bundles, "plugin/bin/connector.mjs", "plugin/bin/hook.mjs"];
  for (const f of need) if (!existsSync(join(repo, f))) usage(`${f} is missing: run \`npm run build\` first`);
  for (const f of [...bundles, "deploy/container/entrypoint.mjs"]) files.set(`/opt/cotal/${f}`, join(repo, f));
  for (const f of readdirSync(join(repo, "plugin"), { recursive: true })) {
    const p = join(repo, "plugin", f);
    if (statSync(p).isFile() && !p.endsWith(".map") && !f.includes(".tmp-")) files.set(`/opt/cotal/plugin/${f}`, p);
  }
  // packageRoot() looks for the first package.json named cotal above the running bundle.
  const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8"));
  files.set("/opt/cotal/package.json", Buffer.from(JSON.stringify({ name: pkg.name, version: pkg.version, type: "module", bin: pkg.bin }, null, 2)));
}

// The Dockerfiles are files beside this script (what a reader of deploy/container/ sees).
const dockerfile = readFileSync(join(repo, "deploy/container", image === "cotal" ? "Dockerfile" : "Dockerfile.nats"), "utf8");

const hash = createHash("sha256");
hash.update(dockerfile);
for (const at of [...files.keys()].sort()) {
  const src = files.get(at);
  hash.update(`\0${at}\0`);
  hash.update(Buffer.isBuffer(src) ? src : readFileSync(src));
}
const digest = hash.digest("hex").slice(0, 16);

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, "home"), { recursive: true });
writeFileSync(join(out, "home", ".keep"), "");
// /tmp is world-writable and sticky, set on the context itself: the classic builder has no COPY --chmod.
mkdirSync(join(out, "rootfs", "tmp"), { recursive: true });
chmodSync(join(out, "rootfs", "tmp"), 0o1777);
for (const [at, src] of files) {
  const dest = join(out, "rootfs", relative("/", at));
  mkdirSync(dirname(dest), { recursive: true });
  if (Buffer.isBuffer(src)) writeFileSync(dest, src);
  else copyFileSync(src, dest);
}
writeFileSync(join(out, "Dockerfile"), dockerfile);
process.stdout.write(`${JSON.stringify({ dir: resolve(out), image, hash: digest })}\n`);
