import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

/**
 * The dashboard's secret (as Jupyter's): only who has it may read the mesh through the dashboard.
 * Any local user or process can reach a loopback port; DM bodies and every channel are behind it.
 * The starting user gets it in the printed link (`/?token=…`); the page then keeps it in an
 * HttpOnly, SameSite=Strict cookie, scoped by port so two dashboards on one host do not mix.
 */
export function newDashboardToken(): string {
  return randomBytes(32).toString("base64url");
}

/** Tokens are 43 base64url characters; anything else in a token file is refused. */
export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{32,128}$/;

/** The cookie carrying the token for the dashboard on `port`. */
export function tokenCookieName(port: number): string {
  return `cotal_web_${port}`;
}

/** Constant-time comparison; a missing or differently sized value never matches. */
export function tokenMatches(given: string | undefined, token: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** How a request proved it holds the token, if it did. `query` asks the server to set the cookie. */
export type TokenProof = "cookie" | "bearer" | "query" | undefined;

/** Check a request's cookie, `Authorization: Bearer`, or `?token=` against the dashboard's token. */
export function tokenProof(req: IncomingMessage, url: URL, token: string, port: number): TokenProof {
  if (tokenMatches(cookieValue(req.headers.cookie, tokenCookieName(port)), token)) return "cookie";
  const auth = req.headers.authorization;
  if (auth?.startsWith("Bearer ") && tokenMatches(auth.slice(7).trim(), token)) return "bearer";
  // In the address only where the link points: the page then holds it in a cookie, scripts send a header.
  if (url.pathname === "/" && tokenMatches(url.searchParams.get("token") ?? undefined, token)) return "query";
  return undefined;
}

/** The Set-Cookie header that keeps the token in the browser for this dashboard. */
export function tokenCookie(port: number, token: string): string {
  return `${tokenCookieName(port)}=${token}; Path=/; HttpOnly; SameSite=Strict`;
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
