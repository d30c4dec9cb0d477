// The dashboard's "all channels" feed shows what channels already hold: on a
// mesh from `cotal up`, a post on #general made before `cotal web` starts, on a channel never
// configured and with nobody on it now, is in the feed's history (the page, in a real browser,
// and the backlog it is sent), not "No posts yet" beside a #general that holds it.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findChromium, launchChromium } from "../harness/browser.js";
import { buildCli, CotalProcess, freePort, runCotal, type CliResult } from "../harness/cli.js";
import { dashboardLink, type DashboardLink } from "../harness/dashboard-link.js";
import { until } from "../../testbed/until.js";

const CHROMIUM = findChromium();
if (!CHROMIUM) console.warn("SKIPPED: the feed-history browser test needs Debian's chromium (apt-get install chromium); none is on PATH.");

let project: string;
let browser: BrowserContext | undefined;
let web: CotalProcess | undefined;
let dash: DashboardLink;
const cotal = (...args: string[]) => runCotal(args, { cwd: project, timeoutMs: 60_000 });
const ok = (r: CliResult, what: string) => expect(r.code, `${what}: exit code; stderr: ${r.stderr}`).toBe(0);

describe.skipIf(!CHROMIUM)("the dashboard's feed of every channel", () => {
  beforeAll(async () => {
    await buildCli();
    project = await mkdtemp(join(tmpdir(), "cotal-feed-"));
    ok(await cotal("up", "--detach", "--port", String(await freePort())), "up");
    ok(await cotal("send", "msg", "general", "posted before the dashboard", "--as", "alice", "--impersonate"), "send msg general");
    web = CotalProcess.spawn(["web", "--port", String(await freePort())], { cwd: project });
    await until(() => web!.lines.some((l) => l.startsWith("dashboard:")) || web!.child.exitCode !== null, 30_000, `the dashboard to serve\n${web.stderr}`);
    dash = dashboardLink(web.lines.join("\n"));
    browser = await launchChromium(CHROMIUM!);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await web?.stop("SIGINT").catch(() => undefined);
    await cotal("down").catch(() => undefined);
    await rm(project, { recursive: true, force: true });
  });

  it("shows a post #general held before it started, with its history badge, instead of 'No posts yet'", async () => {
    const page = await browser!.newPage();
    await page.goto(dash.link);
    await page.goto(`${dash.base}#/feed`);
    const post = page.locator('[data-testid=post][data-channel="general"]', { hasText: "posted before the dashboard" });
    await post.waitFor({ timeout: 20_000 });
    expect(await post.textContent()).toContain("history");
    expect(await page.getByText("No posts yet.").count()).toBe(0);
  }, 60_000);
});
