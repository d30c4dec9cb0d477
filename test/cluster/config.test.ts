// What `cotal up` writes for a cluster node and a leaf listener is a config nats-server accepts
// (`nats-server -t`), and the leaf flags are checked before anything starts.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UsageError } from "../../cli/terminal/errors.js";
import { checkLeafFlags, renderLeafBlock } from "../../cli/mesh-host/leaf-listener.js";
import { renderServerConfig } from "../../cli/mesh-host/nats-process.js";
import { findNatsServer } from "../../testbed/nats-server.js";

const dir = mkdtempSync(join(tmpdir(), "cotal-render-"));
const pem = (name: string) => join(dir, name);

beforeAll(() => {
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  for (const [key, cert, cn] of [
    ["hub.key", "hub.pem", "hub"],
    ["ca.key", "ca.pem", "ca"],
  ]) {
    const r = spawnSync("openssl", ["req", "-x509", ...ec, "-keyout", key!, "-out", cert!, "-days", "1", "-subj", `/CN=${cn}`], { cwd: dir, encoding: "utf8" });
    if (r.status !== 0) throw new Error(r.stderr);
  }
  writeFileSync(pem("empty.pem"), "");
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const refused = (flags: Parameters<typeof checkLeafFlags>[0], host = "127.0.0.1") => {
  try {
    checkLeafFlags(flags, host);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  throw new Error("accepted");
};

describe("leaf flags", () => {
  it("are absent without --leaf-port, and TLS flags without it are refused", () => {
    expect(checkLeafFlags({}, "127.0.0.1")).toBeUndefined();
    expect(refused({ leafTlsCert: pem("hub.pem") })).toMatch(/need --leaf-port/);
  });
  it("refuse a certificate without its key, a CA without a certificate, and an empty or missing file", () => {
    expect(refused({ leafPort: 7422, leafTlsCert: pem("hub.pem") })).toMatch(/go together/);
    expect(refused({ leafPort: 7422, leafTlsCa: pem("ca.pem") })).toMatch(/needs --leaf-tls-cert/);
    expect(refused({ leafPort: 7422, leafTlsCert: pem("empty.pem"), leafTlsKey: pem("hub.key") })).toMatch(
      /--leaf-tls-cert: .*empty\.pem is not a PEM certificate/,
    );
    expect(refused({ leafPort: 7422, leafTlsCert: pem("nope.pem"), leafTlsKey: pem("hub.key") })).toMatch(/nope\.pem does not exist/);
    expect(refused({ leafPort: 7422, leafTlsCert: pem("hub.pem"), leafTlsKey: pem("hub.pem") })).toMatch(/--leaf-tls-key: .* is not a PEM private key/);
  });
  it("allow no TLS on loopback, and elsewhere only with --leaf-insecure", () => {
    expect(checkLeafFlags({ leafPort: 7422 }, "127.0.0.1")).toEqual({ host: "127.0.0.1", port: 7422 });
    expect(refused({ leafPort: 7422, leafHost: "0.0.0.0" })).toMatch(/without TLS/);
    expect(checkLeafFlags({ leafPort: 7422, leafHost: "0.0.0.0", leafInsecure: true }, "127.0.0.1")).toEqual({ host: "0.0.0.0", port: 7422, insecure: true });
  });
  it("keep absolute paths of checked files, and the CA turns on client verification", () => {
    const l = checkLeafFlags(
      { leafPort: 7422, leafHost: "0.0.0.0", leafTlsCert: pem("hub.pem"), leafTlsKey: pem("hub.key"), leafTlsCa: pem("ca.pem") },
      "127.0.0.1",
    )!;
    expect(l.tls).toEqual({ cert: pem("hub.pem"), key: pem("hub.key"), ca: pem("ca.pem") });
    expect(renderLeafBlock(l)).toMatch(/verify: true/);
  });
});

describe("a cluster node's config with a leaf listener", () => {
  it("passes nats-server -t", () => {
    const leaf = checkLeafFlags(
      { leafPort: 7422, leafHost: "0.0.0.0", leafTlsCert: pem("hub.pem"), leafTlsKey: pem("hub.key"), leafTlsCa: pem("ca.pem") },
      "127.0.0.1",
    )!;
    const text = renderServerConfig({
      host: "127.0.0.1",
      port: 14222,
      storeDir: join(dir, "store"),
      portsDir: dir,
      space: "default",
      sync: "always",
      serverName: "cotal_default_n2",
      cluster: {
        name: "cotal_default",
        host: "127.0.0.1",
        port: 16222,
        routes: ["nats-route://127.0.0.1:16221", "nats-route://127.0.0.1:16222", "nats-route://127.0.0.1:16223"],
      },
      leaf: { listener: leaf, port: 7423, account: "$G" },
    });
    expect(text).toMatch(/server_name: "cotal_default_n2"/);
    expect(text).toMatch(/sync_interval: always/);
    expect(text).toMatch(/default_js_domain: { "\$G": "" }/);
    const file = join(dir, "n2.conf");
    writeFileSync(file, text);
    const r = spawnSync(findNatsServer(), ["-t", "-c", file], { encoding: "utf8" });
    expect(r.status, r.stderr + r.stdout).toBe(0);
  });
});
