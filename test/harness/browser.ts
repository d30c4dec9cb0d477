// The real browser the dashboard tests drive: Debian's headless chromium through playwright-core
// (no browser is ever downloaded). Shared by every test that opens `cotal web` in a page.
import { execFileSync } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";

/** Debian's chromium (`apt-get install chromium`), or undefined: a suite then skips, loudly. */
export function findChromium(): string | undefined {
  try {
    const path = execFileSync("sh", ["-c", "command -v chromium"], { encoding: "utf8" }).trim();
    return path || undefined;
  } catch {
    return undefined;
  }
}

/** Flags for a root, offline, headless chromium: without them its background connections fail against the closed network. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
];

/** A headless chromium with its own fresh profile folder. */
export async function launchChromium(executablePath: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(await mkdtemp(join(tmpdir(), "cotal-web-chromium-")), { executablePath, headless: true, args: CHROMIUM_ARGS });
}
