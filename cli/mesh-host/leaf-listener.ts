import { X509Certificate, createPrivateKey } from "node:crypto";
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { z } from "zod";
import { UsageError } from "../terminal/errors.js";

/**
 * The hub side of leaf nodes (docs/setup.md, "Remote hosts"): `cotal up --leaf-port N` opens a
 * nats-server `leafnodes` listener so a remote host's own nats-server can bridge its seats and
 * manager to this mesh over one outbound connection. Kept in mesh.json, so later runs keep it.
 */
export const LeafListener = z.object({
  host: z.string().min(1),
  port: z.number().int().min(1).max(65535),
  /** Absolute paths of checked PEM files; absent only on loopback or with --leaf-insecure. */
  tls: z
    .object({
      cert: z.string().min(1),
      key: z.string().min(1),
      /** When set, the hub also verifies the leaf's client certificate against it (mutual TLS). */
      ca: z.string().min(1).optional(),
    })
    .optional(),
  /** The operator chose a listener without TLS on a non-loopback address. */
  insecure: z.boolean().optional(),
});
export type LeafListener = z.infer<typeof LeafListener>;

/** `cotal up`'s leaf flags, as commander hands them over. */
export interface LeafFlags {
  leafPort?: number | undefined;
  leafHost?: string | undefined;
  leafTlsCert?: string | undefined;
  leafTlsKey?: string | undefined;
  leafTlsCa?: string | undefined;
  leafInsecure?: boolean | undefined;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])$/;

/** Is a listen address reachable from this machine only? */
export function isLoopback(host: string): boolean {
  return LOOPBACK.test(host);
}

/** A PEM file we will hand to nats-server, read and parsed here so a bad one fails with its name, not a server log line. */
const pemFile = (flag: string, kind: "certificate" | "key") =>
  z
    .string()
    .min(1, `${flag} must name a file`)
    .transform((file, ctx) => {
      const path = resolve(file);
      const fail = (why: string) => {
        ctx.addIssue({ code: "custom", message: `${path} ${why}` });
        return z.NEVER;
      };
      try {
        if (!statSync(path).isFile()) return fail("is not a file");
        accessSync(path, constants.R_OK);
      } catch (err) {
        return fail((err as NodeJS.ErrnoException).code === "ENOENT" ? "does not exist" : "cannot be read");
      }
      const text = readFileSync(path, "utf8");
      try {
        if (kind === "certificate") {
          if (!text.includes("-----BEGIN CERTIFICATE-----")) return fail("is not a PEM certificate (no BEGIN CERTIFICATE block)");
          new X509Certificate(text);
        } else {
          if (!/-----BEGIN (RSA |EC |ENCRYPTED )?PRIVATE KEY-----/.test(text)) return fail("is not a PEM private key (no BEGIN PRIVATE KEY block)");
          if (text.includes("ENCRYPTED")) return fail("is an encrypted key; nats-server needs it unencrypted (readable by the server's user only)");
          createPrivateKey(text);
        }
      } catch (err) {
        return fail(`does not parse as a PEM ${kind}: ${(err as Error).message}`);
      }
      return path;
    });

const LeafFlagsSchema = z.object({
  leafPort: z.number().int().min(1).max(65535),
  leafHost: z.string().min(1),
  leafTlsCert: pemFile("--leaf-tls-cert", "certificate").optional(),
  leafTlsKey: pemFile("--leaf-tls-key", "key").optional(),
  leafTlsCa: pemFile("--leaf-tls-ca", "certificate").optional(),
  leafInsecure: z.boolean().optional(),
});

/**
 * Check `cotal up`'s leaf flags into a listener, or undefined when no --leaf-port was given.
 * Refused: TLS flags without a port, a certificate without its key (or a key that does not
 * belong to it), and a listener without TLS on a non-loopback address unless --leaf-insecure
 * says so: a leaf connection carries every message of the space.
 */
export function checkLeafFlags(flags: LeafFlags, defaultHost: string): LeafListener | undefined {
  const any = flags.leafTlsCert ?? flags.leafTlsKey ?? flags.leafTlsCa ?? flags.leafHost ?? flags.leafInsecure;
  if (flags.leafPort === undefined) {
    if (any !== undefined)
      throw new UsageError("Invalid input: --leaf-host, --leaf-tls-* and --leaf-insecure need --leaf-port.", {
        remedy: "Add --leaf-port <n> (7422 is the usual leaf port).",
      });
    return undefined;
  }
  const r = LeafFlagsSchema.safeParse({ ...flags, leafHost: flags.leafHost ?? defaultHost });
  if (!r.success) {
    const lines = r.error.issues.map((i) => `--${String(i.path[0] ?? "leaf").replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}: ${i.message}`);
    throw new UsageError(`Invalid input: ${lines.join("; ")}.`, { remedy: 'Pass readable PEM files (see docs/setup.md, "Remote hosts").' });
  }
  const f = r.data;
  if ((f.leafTlsCert === undefined) !== (f.leafTlsKey === undefined)) {
    throw new UsageError("Invalid input: --leaf-tls-cert and --leaf-tls-key go together.", { remedy: "Pass both: the hub's certificate and its private key." });
  }
  if (f.leafTlsCa && !f.leafTlsCert)
    throw new UsageError("Invalid input: --leaf-tls-ca needs --leaf-tls-cert and --leaf-tls-key.", {
      remedy: "TLS needs the hub's own certificate and key first.",
    });
  if (f.leafTlsCert && f.leafTlsKey) {
    const cert = new X509Certificate(readFileSync(f.leafTlsCert));
    if (!cert.checkPrivateKey(createPrivateKey(readFileSync(f.leafTlsKey)))) {
      throw new UsageError(`Invalid input: --leaf-tls-key ${f.leafTlsKey} is not the private key of --leaf-tls-cert ${f.leafTlsCert}.`, {
        remedy: "Pass the key the certificate was issued for.",
      });
    }
  }
  if (!f.leafTlsCert && !isLoopback(f.leafHost) && !f.leafInsecure) {
    throw new UsageError(`A leaf-node listener on ${f.leafHost} without TLS would carry every message of the space in clear text.`, {
      remedy:
        "Pass --leaf-tls-cert and --leaf-tls-key (and --leaf-tls-ca to verify the leaf hosts' certificates), listen on loopback (--leaf-host 127.0.0.1, e.g. behind an SSH tunnel), or accept the risk with --leaf-insecure.",
    });
  }
  return {
    host: f.leafHost,
    port: f.leafPort,
    ...(f.leafTlsCert && f.leafTlsKey ? { tls: { cert: f.leafTlsCert, key: f.leafTlsKey, ...(f.leafTlsCa ? { ca: f.leafTlsCa } : {}) } } : {}),
    ...(f.leafInsecure && !f.leafTlsCert ? { insecure: true } : {}),
  };
}

/**
 * The `leafnodes` block of nats-server.conf. Leaf hosts authenticate like any client: in static
 * mode with a `leaf` credential (`cotal mint <host> --profile leaf`), checked by the operator-mode
 * resolver; with a CA, the TLS handshake also requires a certificate it signed.
 */
export function renderLeafBlock(l: LeafListener, port = l.port): string {
  const lines = ["leafnodes {", `  listen: ${JSON.stringify(`${l.host}:${port}`)}`];
  if (l.tls) {
    lines.push(
      "  tls {",
      `    cert_file: ${JSON.stringify(l.tls.cert)}`,
      `    key_file: ${JSON.stringify(l.tls.key)}`,
      ...(l.tls.ca ? [`    ca_file: ${JSON.stringify(l.tls.ca)}`, "    verify: true"] : []),
      "    timeout: 5",
      "  }",
    );
  }
  lines.push("}");
  return lines.join("\n");
}
