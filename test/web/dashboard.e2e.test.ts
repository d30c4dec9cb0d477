// `cotal web` end to end, as a user runs it, in Debian's headless chromium (playwright-core drives
// it; no browser is ever downloaded): a static mesh from `cotal up`, two echo seats from
// `cotal spawn -d --agent echo`, traffic. The page shows both seats; a DM's waiting count rises
// while its recipient is stopped and falls after it restarts; an agent's timeline shows a tool call
// published on its own event plane with its own credential; a screenshot of each view is written to
// test-artifacts/web/; a dashboard reading with an observer credential never shows a DM body; what
// went stale is marked stale.
import { request } from "node:http";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Endpoint, logger } from "../../broker/index.js";
import { EventPlane } from "../../connector/internal.js";
import { findChromium, launchChromium } from "../harness/browser.js";
import { buildCli, cleanEnv, CotalProcess, freePort, projectRoot, runCotal, type CliResult } from "../harness/cli.js";
import { until } from "../harness/fixtures.js";
import { dashboardLink, type DashboardLink } from "../harness/dashboard-link.js";

const CHROMIUM = findChromium();
if (!CHROMIUM) console.warn("SKIPPED: cotal web's browser tests need Debian's chromium (apt-get install chromium); none is on PATH.");

const ARTIFACTS = join(projectRoot, "test-artifacts", "web");

let project: string;
let browser: BrowserContext;
let adminUrl: string;
let observerUrl: string;
/** Each dashboard's printed link (with its token), by base URL. */
const links = new Map<string, DashboardLink>();

/** Remember a printed link; returns its base URL (the tests build paths on it). */
function remember(output: string): string {
  const d = dashboardLink(output);
  links.set(d.base, d);
  return d.base;
}

/** The Authorization header a dashboard at this URL takes. */
function authFor(url: string): Record<string, string> {
  const d = links.get(`${new URL(url).origin}/`);
  return d ? { Authorization: `Bearer ${d.token}` } : {};
}

/** fetch() with the dashboard's token, as the page (its cookie) and every reader of the link have it. */
const fetchAuthed = (url: string, init: RequestInit = {}) => fetch(url, { ...init, headers: authFor(url) });
let observerWeb: CotalProcess;
const cotal = (...args: string[]) => runCotal(args, { cwd: project, timeoutMs: 60_000 });
const planes: EventPlane[] = [];
const endpoints: Endpoint[] = [];

function ok(r: CliResult): CliResult {
  expect(r.code, `exit code; stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

async function openPage(url: string): Promise<Page> {
  const page = await browser.newPage();
  page.on("pageerror", (err) => console.error(`page error: ${err.message}`));
  // Opening the printed link: the server moves its token into a cookie for the page's later requests.
  await page.goto(links.get(url)?.link ?? url);
  return page;
}

async function show(page: Page, base: string, view: string): Promise<void> {
  await page.goto(`${base}#/${view}`);
  await page.locator(`[data-view="${view.split("/")[0]}"]`).waitFor({ timeout: 15_000 });
}

async function screenshot(page: Page, name: string): Promise<void> {
  const file = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  expect(statSync(file).size, `${file} is empty`).toBeGreaterThan(1_000);
}

const pendingOf = (page: Page, id: string) =>
  page
    .locator(`[data-testid=roster-row][data-id="${id}"] [data-testid=pending]`)
    .textContent({ timeout: 2_000 })
    .catch(() => null);

async function waitForPending(page: Page, id: string, want: string, what: string): Promise<void> {
  let last: string | null = null;
  await until(async () => (last = await pendingOf(page, id)) === want, 30_000, `${what} (the page shows ${JSON.stringify(last)})`);
}

/** The echo seat's own launch material (its credential included), as the manager wrote it. */
function launchMaterialOf(name: string): { server: string; space: string; name: string; creds: string } {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const f of readdirSync(dir, { withFileTypes: true })) {
      if (f.isDirectory()) walk(join(dir, f.name));
      else if (f.name === "launch.json") found.push(join(dir, f.name));
    }
  };
  walk(join(project, ".cotal", "manager"));
  const m = found
    .map((f) => JSON.parse(readFileSync(f, "utf8")) as { server: string; space: string; name: string; creds: string })
    .find((x) => x.name === name && existsSync(x.creds));
  if (!m) throw new Error(`no launch material for ${name} among ${found.join(", ")}`);
  return m;
}

/** A raw HTTP request (fetch may not set Host): status and body. */
function http(url: string, opts: { method?: string; host?: string; noToken?: boolean } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: opts.method ?? "GET",
        headers: { ...(opts.host ? { Host: opts.host } : {}), ...(opts.noToken ? {} : authFor(url)) },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe.skipIf(!CHROMIUM)("cotal web in a real browser", () => {
  beforeAll(async () => {
    await buildCli();
    mkdirSync(ARTIFACTS, { recursive: true });
    project = await mkdtemp(join(tmpdir(), "cotal-web-"));
    ok(await cotal("up", "--detach", "--port", String(await freePort())));
    ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "echo1"));
    ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "echo2"));
    // The admin dashboard, detached, as a user starts it: it mints its own admin credential.
    const web = ok(await cotal("web", "--detach", "--port", String(await freePort())));
    adminUrl = remember(web.stdout);
    // A second one reading with an observer credential (every channel, no DMs).
    ok(await cotal("mint", "olga", "--profile", "observer"));
    observerWeb = CotalProcess.spawn(["web", "--port", String(await freePort()), "--creds", join(project, ".cotal", "creds", "olga.creds")], {
      cwd: project,
      env: cleanEnv(),
    });
    await until(
      () => observerWeb.lines.some((l) => l.startsWith("dashboard:")) || observerWeb.child.exitCode !== null,
      30_000,
      () => `the observer dashboard to serve\n${observerWeb.stderr}`,
    );
    observerUrl = remember(observerWeb.lines.join("\n"));
    browser = await launchChromium(CHROMIUM!);
  }, 180_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    for (const p of planes) await p.close(0).catch(() => undefined);
    for (const e of endpoints) await e.close().catch(() => undefined);
    await observerWeb?.stop("SIGTERM").catch(() => undefined);
    if (project && existsSync(join(project, ".cotal", "mesh.json"))) {
      await cotal("web", "--stop").catch(() => undefined);
      await cotal("down").catch(() => undefined);
    }
    if (project) await rm(project, { recursive: true, force: true });
  }, 60_000);

  it("shows both echo seats on the roster, live, with the runtime each runs", async () => {
    const page = await openPage(adminUrl);
    await show(page, adminUrl, "roster");
    for (const id of ["local.echo1", "local.echo2"]) {
      await page.locator(`[data-testid=roster-row][data-id="${id}"]`).waitFor({ timeout: 20_000 });
      await until(async () => /idle/.test((await page.locator(`[data-testid=roster-row][data-id="${id}"]`).textContent()) ?? ""), 20_000, `${id} shown idle`);
      // The runtime the manager launched, as the seat's card says it.
      await expect(page.locator(`[data-testid=roster-row][data-id="${id}"] [data-testid=runtime]`).textContent()).resolves.toBe("echo");
    }
    await expect(page.locator("#who").textContent()).resolves.toMatch(/reading as admin/);
    await screenshot(page, "roster");
    await page.close();
  }, 60_000);

  it("a DM's waiting count rises while its recipient is stopped and falls after it restarts", async () => {
    const page = await openPage(adminUrl);
    await show(page, adminUrl, "roster");
    await waitForPending(page, "local.echo2", "0", "echo2 has nothing waiting");
    ok(await cotal("stop", "--name", "echo2"));
    ok(await cotal("send", "dm", "echo2", "first **while** you were out", "--as", "carol", "--impersonate"));
    await waitForPending(page, "local.echo2", "1", "one DM waiting for the stopped echo2");
    ok(await cotal("send", "dm", "echo2", "second", "--as", "carol", "--impersonate"));
    await waitForPending(page, "local.echo2", "2", "two DMs waiting for the stopped echo2");
    await expect(page.locator('[data-testid=roster-row][data-id="local.echo2"] [data-testid=oldest]').textContent()).resolves.toMatch(/\d+ s/);
    await screenshot(page, "roster-waiting");

    // Its detail: the waiting mail with its bodies (an admin reads DMs), and its seat log.
    await show(page, adminUrl, "agent/local.echo2");
    await until(
      async () => /2 DMs waiting/.test((await page.locator("[data-testid=agent-pending]").textContent()) ?? ""),
      20_000,
      "the agent view counts 2 waiting DMs",
    );
    await expect(page.locator("[data-testid=agent-runtime]").textContent()).resolves.toBe("echo");
    const waiting = page.locator("[data-testid=waiting-dm]", { hasText: "while you were out" });
    await waiting.waitFor({ timeout: 10_000 });
    // carol's DM was the operator's (--impersonate): the dashboard says so, as every view does.
    await expect(waiting.locator("[data-testid=sent-by]").textContent()).resolves.toBe(" (sent by the operator local.cotal_cli)");
    await until(
      async () => (await page.locator("[data-testid=seat-event]").allTextContents()).some((t) => /retired/.test(t)),
      20_000,
      "the seat log shows it retired",
    );
    await screenshot(page, "agent-waiting");

    ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "echo2"));
    await show(page, adminUrl, "roster");
    await waitForPending(page, "local.echo2", "0", "the restarted echo2 took its mail");
    await page.close();
  }, 120_000);

  it("an agent's timeline shows a tool call, published on its own event plane with its own credential", async () => {
    const m = launchMaterialOf("echo1");
    const ep = await Endpoint.connect({ server: m.server, space: m.space, name: m.name, creds: m.creds, kind: "agent" });
    endpoints.push(ep);
    const dir = await mkdtemp(join(tmpdir(), "cotal-web-plane-"));
    const transcript = join(dir, "t.jsonl");
    writeFileSync(transcript, "");
    const plane = new EventPlane({ ep, dir: join(dir, "events"), log: logger("web-test"), pollMs: 50, retryMs: 100 });
    planes.push(plane);
    plane.start();
    plane.sessionStart({ sessionId: "s-echo1", transcriptPath: transcript, source: "startup" });
    const records = [
      { type: "user", uuid: "p-1", message: { role: "user", content: "Please list the **files**" } },
      {
        type: "assistant",
        uuid: "t-1",
        message: { role: "assistant", content: [{ type: "tool_use", id: "tool-1", name: "Bash", input: { command: "ls /secret-arg" } }] },
      },
      { type: "user", uuid: "r-1", message: { role: "user", content: [{ type: "tool_result", tool_use_id: "tool-1", content: "secret-result" }] } },
      { type: "assistant", uuid: "a-1", message: { role: "assistant", content: [{ type: "text", text: "Listed them." }], stop_reason: "end_turn" } },
    ];
    appendFileSync(transcript, records.map((r) => JSON.stringify(r) + "\n").join(""));

    const page = await openPage(adminUrl);
    await show(page, adminUrl, "agent/local.echo1");
    await page.locator("[data-testid=timeline-entry][data-kind=tool-started]", { hasText: "Bash" }).waitFor({ timeout: 30_000 });
    await page.locator("[data-testid=timeline-entry][data-kind=reply]", { hasText: "Listed them." }).waitFor({ timeout: 10_000 });
    await page.locator("[data-testid=timeline-entry][data-kind=prompt] strong", { hasText: "files" }).waitFor({ timeout: 10_000 });
    const html = await page.content();
    expect(html).not.toContain("secret-arg");
    expect(html).not.toContain("secret-result");
    await screenshot(page, "agent");
    await page.close();
  }, 90_000);

  it("the feed shows channel posts with their delivery class, and the managers view the host's manager with its seats", async () => {
    const page = await openPage(adminUrl);
    await show(page, adminUrl, "feed");
    ok(await cotal("send", "msg", "general", "release is **green** <img src=x onerror=alert(1)>", "--as", "alice", "--impersonate"));
    const post = page.locator("[data-testid=post][data-channel=general]", { hasText: "release is" });
    await post.waitFor({ timeout: 20_000 });
    await expect(post.locator("[data-testid=class]").textContent()).resolves.toBe("durable");
    await expect(post.locator("strong", { hasText: "green" }).count()).resolves.toBe(1);
    await expect(post.locator("img").count()).resolves.toBe(0);
    await screenshot(page, "feed");

    await show(page, adminUrl, "feed/general");
    await page.locator("[data-testid=post][data-channel=general]", { hasText: "release is" }).waitFor({ timeout: 20_000 });
    await screenshot(page, "feed-general");

    await show(page, adminUrl, "managers");
    const row = page.locator("[data-testid=manager-row]").first();
    await row.waitFor({ timeout: 20_000 });
    await until(
      async () => /ok/.test((await row.textContent()) ?? "") && /local\.echo1/.test((await row.textContent()) ?? ""),
      20_000,
      "the manager shown healthy with its seats",
    );
    await screenshot(page, "managers");
    await page.close();
  }, 90_000);

  it("serves GET only, answers only loopback Host names, and checks its query parameters", async () => {
    expect((await http(`${adminUrl}api/state`)).status).toBe(200);
    expect((await http(`${adminUrl}api/state`, { method: "POST" })).status).toBe(405);
    expect((await http(`${adminUrl}api/state`, { method: "DELETE" })).status).toBe(405);
    // A DNS name rebound to 127.0.0.1 reaches the socket, not the dashboard.
    const rebound = await http(`${adminUrl}api/state`, { host: "rebind.attacker.example" });
    expect(rebound.status).toBe(421);
    expect(rebound.body).not.toContain("echo1");
    const bad = await http(`${adminUrl}api/agent?id=${encodeURIComponent("a.b.c")}`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatch(/id:/);
    expect((await http(`${adminUrl}api/channel?name=general&limit=0`)).status).toBe(400);
    expect((await http(`${adminUrl}api/channel?name=general&limit=5`)).status).toBe(200);
    const page = await fetchAuthed(adminUrl);
    expect(page.headers.get("content-security-policy")).toMatch(/script-src 'self'/);
  }, 30_000);

  it("marks a queue stuck (red) when mail keeps waiting while its seat is idle", async () => {
    // A seat that joins (idle) and never takes its mail: what a wedged agent looks like from outside.
    ok(await cotal("mint", "slowpoke", "--profile", "agent", "--provision"));
    const { server, space } = launchMaterialOf("echo1");
    const slow = await Endpoint.connect({ server, space, name: "slowpoke", creds: join(project, ".cotal", "creds", "slowpoke.creds"), kind: "agent" });
    endpoints.push(slow);
    await slow.join();
    ok(await cotal("send", "dm", "slowpoke", "are you stuck?", "--as", "carol", "--impersonate"));
    const page = await openPage(adminUrl);
    await show(page, adminUrl, "roster");
    const oldest = page.locator('[data-testid=roster-row][data-id="local.slowpoke"] [data-testid=oldest]');
    await waitForPending(page, "local.slowpoke", "1", "one DM waiting for slowpoke");
    // Not stuck at first; stuck once the mail waited past the threshold while the seat stayed idle.
    await until(
      async () => (await oldest.getAttribute("class", { timeout: 2_000 }).catch(() => null)) === "stuck",
      60_000,
      "slowpoke's oldest waiting DM shown stuck",
    );
    await expect(oldest.textContent()).resolves.toMatch(/\(stuck\)/);
    await screenshot(page, "roster-stuck");
    await page.close();
  }, 90_000);

  it("never shows a DM body to a non-admin credential, and the broker keeps the admin dashboard read-only", async () => {
    const secret = `SECRET-DM-BODY-${Date.now()}`;
    ok(await cotal("send", "dm", "zed", secret, "--as", "carol", "--impersonate"));
    // The admin dashboard shows it (so its absence below is not a page that shows nothing).
    const admin = await openPage(adminUrl);
    await show(admin, adminUrl, "agent/local.zed");
    await admin.locator("[data-testid=waiting-dm]", { hasText: secret }).waitFor({ timeout: 20_000 });
    await admin.close();

    const page = await openPage(observerUrl);
    await show(page, observerUrl, "roster");
    await until(
      async () => /reading as observer \(no DM bodies\)/.test((await page.locator("#who").textContent()) ?? ""),
      20_000,
      "the observer dashboard loaded",
    );
    await page.locator('[data-testid=roster-row][data-id="local.echo1"]').waitFor({ timeout: 20_000 });
    for (const view of ["roster", "feed", "agent/local.zed", "agent/local.echo2", "managers"]) {
      await show(page, observerUrl, view);
      await page.waitForLoadState("networkidle").catch(() => undefined);
      expect(await page.content(), `the observer's ${view} view`).not.toContain(secret);
    }
    await show(page, observerUrl, "agent/local.zed");
    await until(
      async () => /not readable with this credential/.test((await page.locator("[data-testid=agent-pending]").textContent()) ?? ""),
      20_000,
      "the observer's agent view says waiting mail is not readable",
    );
    await expect(page.locator("[data-testid=waiting-dm]").count()).resolves.toBe(0);
    await screenshot(page, "observer-agent");
    for (const api of ["api/state", "api/agent?id=local.zed", "api/agent?id=local.echo2"]) {
      const body = await (await fetchAuthed(`${observerUrl}${api}`)).text();
      expect(body, api).not.toContain(secret);
      expect(body, api).not.toContain('"waiting"');
    }

    // The dashboard's own credential may read, not write: the broker refuses a post with it (exit 5).
    const post = await cotal("send", "msg", "general", "from the dashboard", "--creds", join(project, ".cotal", "creds", "web.creds"));
    expect(post.code, post.stderr).toBe(5);

    // The observer's dashboard stops: the open page marks everything stale instead of showing it as current.
    await observerWeb.stop("SIGTERM");
    await page.locator("#banner", { hasText: "Stale" }).waitFor({ timeout: 20_000 });
    await expect(page.locator("body").getAttribute("data-stale")).resolves.toBe("true");
    await screenshot(page, "stale");
    await page.close();
  }, 120_000);

  it("cotal down stops the detached dashboard with the mesh (last: it takes the mesh down)", async () => {
    const down = ok(await cotal("down", "--json"));
    expect(JSON.parse(down.stdout).web.result).toBe("stopped");
    await expect(fetchAuthed(`${adminUrl}api/state`, { signal: AbortSignal.timeout(5_000) })).rejects.toThrow();
  }, 60_000);
});
