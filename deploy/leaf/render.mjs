#!/usr/bin/env node
// Renders the nats-server config of a remote host that joins a Cotal mesh as a leaf node
// (docs/remote-hosts.md). Run it on the mesh host, where `.cotal/auth/` is; it reads only public
// material there (the operator's and the space's account JWTs, never a seed) and prints a config
// to copy to the remote host beside the files it names:
//
//   node deploy/leaf/render.mjs --hub tls://hub.example.com:7422 [--space default]
//        [--auth-dir .cotal/auth] [--name hostb] [--listen 127.0.0.1:4222]
//        [--creds /etc/cotal/leaf.creds] [--ca /etc/cotal/hub-ca.pem]
//        [--cert /etc/cotal/leaf.pem --key /etc/cotal/leaf.key]   > leaf.conf
//
// The remote host's server runs in operator mode with the mesh's operator and the space's clients
// account preloaded, so every local client (manager, seats) still authenticates with its own
// credential and the server enforces that credential's permissions; its one outbound leaf
// connection carries them to the hub under the leaf credential (`cotal mint <host>_leaf
// --profile leaf`), over TLS verified against the hub's CA.
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const { values: o } = parseArgs({
  options: {
    hub: { type: "string" },
    space: { type: "string", default: "default" },
    "auth-dir": { type: "string", default: ".cotal/auth" },
    name: { type: "string", default: "leaf" },
    listen: { type: "string", default: "127.0.0.1:4222" },
    creds: { type: "string", default: "/etc/cotal/leaf.creds" },
    ca: { type: "string", default: "/etc/cotal/hub-ca.pem" },
    cert: { type: "string" },
    key: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});

function fail(msg) {
  process.stderr.write(`render.mjs: ${msg}\n`);
  process.exit(2);
}
if (o.help) {
  const lines = readFileSync(new URL(import.meta.url), "utf8")
    .split("\n")
    .slice(1);
  const header = lines.slice(
    0,
    lines.findIndex((l) => !l.startsWith("//")),
  );
  process.stdout.write(header.map((l) => l.replace(/^\/\/ ?/, "")).join("\n") + "\n");
  process.exit(0);
}
if (!o.hub) fail("--hub tls://<hub host>:<leaf port> is required (the hub's `cotal up --leaf-port`)");
if (!/^(tls|nats-leaf|nats):\/\/[^/\s]+:\d+$/.test(o.hub)) fail(`--hub ${o.hub} is not a leaf URL like tls://hub.example.com:7422`);
if (!o.hub.startsWith("tls://")) process.stderr.write("render.mjs: warning: --hub is not tls://: the leaf connection would carry the space in clear text\n");
if (!/^[A-Za-z0-9_-]+$/.test(o.space)) fail(`--space ${o.space} is not a space name`);
if (!/^[A-Za-z0-9_-]+$/.test(o.name)) fail(`--name ${o.name}: letters, digits, '_' and '-' only`);
if ((o.cert === undefined) !== (o.key === undefined)) fail("--cert and --key go together (the leaf's client certificate for a hub that verifies it)");

/** An account JWT's subject (its public key), read from the JWT itself. */
function subjectOf(jwt, file) {
  try {
    const claims = JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString("utf8"));
    if (typeof claims.sub === "string" && /^A[A-Z2-7]{55}$/.test(claims.sub)) return claims.sub;
  } catch {
    /* reported below */
  }
  return fail(`${file} is not an account JWT`);
}
function readJwt(...parts) {
  const file = resolve(o["auth-dir"], ...parts);
  let text;
  try {
    text = readFileSync(file, "utf8").trim();
  } catch (err) {
    return fail(`cannot read ${file} (${err.code ?? err.message}): run this on the mesh host, with --auth-dir naming its .cotal/auth`);
  }
  return { jwt: text, sub: file.endsWith("operator.jwt") ? undefined : subjectOf(text, file) };
}

const operator = readJwt("operator.jwt").jwt;
const sys = readJwt("accounts", "SYS.jwt");
const clients = readJwt(join("clients", `${o.space}.jwt`));
const q = (s) => JSON.stringify(s);

process.stdout.write(
  [
    `# A Cotal leaf-node host for space ${q(o.space)}, rendered by deploy/leaf/render.mjs from the mesh's`,
    "# public JWTs. After a `cotal revoke` on the mesh, render it again and reload this server",
    "# (nats-server --signal reload=<pid>, or SIGHUP): it resolves accounts from this file alone",
    '# (docs/security.md, "Leaf-node hosts").',
    `server_name: ${q(o.name)}`,
    `listen: ${q(o.listen)}`,
    "# Operator mode: local clients authenticate with their own credentials, checked here.",
    `operator: ${q(operator)}`,
    `system_account: ${sys.sub}`,
    "resolver: MEMORY",
    "resolver_preload: {",
    `  ${sys.sub}: ${q(sys.jwt)}`,
    `  ${clients.sub}: ${q(clients.jwt)}`,
    "}",
    "# No JetStream here: the space's JetStream is the hub's. Without this line nats-server denies",
    '# $JS.API.>, $KV.> and $OBJ.> across the leaf connection ("JetStream Not Extended"); the hub',
    "# needs the same line for this account (`cotal up --leaf-port` writes it).",
    `default_js_domain: { ${clients.sub}: "" }`,
    "leafnodes {",
    "  # The hub remakes this connection when what the host runs changes (a seat started or retired:",
    "  # docs/security.md, Leaf-node hosts); it comes back this soon after (nats-server's default is 1s).",
    '  reconnect: "500ms"',
    "  remotes: [",
    "    {",
    `      url: ${q(o.hub)}`,
    "      # The space's clients account here is bridged to the same account on the hub.",
    `      account: ${clients.sub}`,
    `      credentials: ${q(o.creds)}`,
    "      tls {",
    `        ca_file: ${q(o.ca)}`,
    ...(o.cert ? [`        cert_file: ${q(o.cert)}`, `        key_file: ${q(o.key)}`] : []),
    "      }",
    "    }",
    "  ]",
    "}",
    "",
  ].join("\n"),
);
