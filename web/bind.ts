import { isIP } from "node:net";

/** How the dashboard's listening address reaches the network. */
export type BindScope = "loopback" | "wildcard" | "address";

/** The dashboard's default listening address: loopback only. */
export const DEFAULT_WEB_HOST = "127.0.0.1";
/** The dashboard's default port. */
export const DEFAULT_WEB_PORT = 7799;

/**
 * Where `--host` makes the dashboard listen, or why it is refused. The rule: only an IP literal
 * or `localhost` is accepted, so what is bound is what was typed. A host name could resolve to
 * anything (a wildcard among them), and "", "*" or "0" mean "every address" to some tools: all
 * refused. A wildcard (0.0.0.0, ::) is accepted only when spelled out, and the caller warns.
 */
export function bindScope(host: string): { scope: BindScope } | { problem: string } {
  if (host === "localhost") return { scope: "loopback" };
  const family = isIP(host);
  if (family === 0) {
    const hint = host.startsWith("[") ? " (without brackets)" : "";
    return {
      problem:
        `host must be an IP address${hint} or localhost (got ${JSON.stringify(host)}): a name could resolve to any address. ` +
        "The default 127.0.0.1 serves this machine only; to serve every address, name the wildcard itself: --host 0.0.0.0 or --host ::",
    };
  }
  if (family === 4) {
    if (host === "0.0.0.0") return { scope: "wildcard" };
    return { scope: host.startsWith("127.") ? "loopback" : "address" };
  }
  const v6 = host.toLowerCase();
  // Every spelling of the unspecified address (::, ::0, 0:0:0:0:0:0:0:0) is the wildcard.
  if (/^[0:]+$/.test(v6)) return { scope: "wildcard" };
  if (/^(0{0,4}:){1,7}0{0,3}1$/.test(v6) || v6 === "::1") return { scope: "loopback" };
  if (v6.startsWith("::ffff:127.")) return { scope: "loopback" };
  return { scope: "address" };
}

/**
 * Whether a request's Host header may be served. A loopback dashboard answers only requests that
 * name a loopback host, so a web page elsewhere cannot reach it through a DNS name rebound to
 * 127.0.0.1 (DNS rebinding). A dashboard bound beyond loopback was asked for by name: any Host.
 */
export function hostHeaderAllowed(header: string | undefined, scope: BindScope): boolean {
  if (scope !== "loopback") return true;
  if (!header) return false;
  const name = header.startsWith("[") ? header.slice(1, header.indexOf("]")) : header.replace(/:\d+$/, "");
  if (name === "localhost") return true;
  const r = bindScope(name);
  return "scope" in r && r.scope === "loopback";
}
