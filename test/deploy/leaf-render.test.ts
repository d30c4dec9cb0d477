// deploy/leaf/render.mjs: the config it renders from a real auth store passes `nats-server -t`,
// holds only public material, bridges the space's clients account with default_js_domain, and
// bad input is refused with exit 2 naming the flag. (The leaf running for real, with a hub and
// seats, is test/containers/leaf.test.ts.)
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthStore } from "../../broker/index.js";
import { projectRoot } from "../harness/build.js";
import { findNatsServer } from "../../testbed/nats-server.js";

const run = promisify(execFile);
const script = join(projectRoot, "deploy/leaf/render.mjs");
let dir: string;
let auth: string;

function render(args: string[]) {
  return spawnSync(process.execPath, [script, ...args], { encoding: "utf8" });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cotal-leaf-render-"));
  auth = join(dir, "auth");
  const store = await AuthStore.open(auth);
  await store.ensureSpace("default");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("deploy/leaf/render.mjs", () => {
  it("renders a config nats-server accepts, with public JWTs only and the clients account bridged", async () => {
    // The files the config names must exist for `-t` (it loads the CA).
    await run("openssl", [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-keyout",
      join(dir, "ca.key"),
      "-out",
      join(dir, "ca.pem"),
      "-days",
      "1",
      "-subj",
      "/CN=render-test",
    ]);
    writeFileSync(join(dir, "leaf.creds"), "", { mode: 0o600 });
    const { stdout } = await run(process.execPath, [
      script,
      "--hub",
      "tls://hub.example.com:7422",
      "--auth-dir",
      auth,
      "--name",
      "hostb",
      "--creds",
      join(dir, "leaf.creds"),
      "--ca",
      join(dir, "ca.pem"),
    ]);
    const conf = join(dir, "leaf.conf");
    writeFileSync(conf, stdout);
    const t = spawnSync(findNatsServer(), ["-t", "-c", conf], { encoding: "utf8" });
    expect(t.status, t.stderr + t.stdout).toBe(0);

    const clientsJwt = readFileSync(join(auth, "clients", "default.jwt"), "utf8").trim();
    const clients = (JSON.parse(Buffer.from(clientsJwt.split(".")[1]!, "base64url").toString("utf8")) as { sub: string }).sub;
    expect(stdout).toContain(`account: ${clients}`);
    expect(stdout).toContain(`default_js_domain: { ${clients}: "" }`);
    expect(stdout).toContain("resolver: MEMORY");
    expect(stdout).not.toMatch(/^jetstream\s*\{/m);
    // No seed of any kind (operator S O…, account S A…, user S U…) leaves the mesh host.
    expect(stdout).not.toMatch(/\bS[OAU][A-Z2-7]{50,}/);
    // The data account, where the streams live, is not known to the leaf.
    const dataJwt = readFileSync(join(auth, "accounts", "default.jwt"), "utf8").trim();
    expect(stdout).not.toContain(dataJwt);
  });

  it("refuses bad input with exit 2, naming what is wrong", () => {
    const noHub = render(["--auth-dir", auth]);
    expect(noHub.status).toBe(2);
    expect(noHub.stderr).toMatch(/--hub/);
    const badHub = render(["--hub", "hub.example.com", "--auth-dir", auth]);
    expect(badHub.status).toBe(2);
    expect(badHub.stderr).toMatch(/not a leaf URL/);
    const noAuth = render(["--hub", "tls://h:7422", "--auth-dir", join(dir, "missing")]);
    expect(noAuth.status).toBe(2);
    expect(noAuth.stderr).toMatch(/run this on the mesh host/);
    const halfTls = render(["--hub", "tls://h:7422", "--auth-dir", auth, "--cert", "x.pem"]);
    expect(halfTls.status).toBe(2);
    expect(halfTls.stderr).toMatch(/--cert and --key go together/);
    const plain = render(["--hub", "nats://h:7422", "--auth-dir", auth]);
    expect(plain.status).toBe(0);
    expect(plain.stderr).toMatch(/clear text/);
  });
});
