// The dashboard talks, as the person at the mesh host, through the shipped CLI and real Chromium:
// `cotal up -d --me ann` from a shell holding the Claude double's URL, a Claude seat alice
// (`cotal spawn --agent claude`), `cotal web -d`. In the page ann posts on #general (a mention
// completed from the roster, then a reply to her post), DMs alice from alice's view, and alice's
// model answers with cotal_dm: the answer shows in ann's Inbox with its unread count in the nav,
// and marking it read empties `cotal inbox` too. Every write is refused to a page on another
// origin (403, nothing stored; the browser may send the dashboard's cookie along: another port
// of the same host is the same site), to a request without the token header (401, the cookie alone
// included), and by `cotal web --read-only` (405). Screenshots of each view go to docs/web/ with
// COTAL_DOCS_SCREENSHOTS=1.
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findNatsServer } from "../../broker/index.js";
import { findChromium, launchChromium } from "../harness/browser.js";
import { claudeEnv, projectRoot } from "../harness/claude-runner.js";
import { buildCli, CotalProcess, exitedOk as ok, freePort, runCotal } from "../harness/cli.js";
import { dashboardLink, fetchDashboard, type DashboardLink } from "../harness/dashboard-link.js";
import { ModelDouble, newToolResults, newTurnText } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";
import { RUNTIMES } from "../../runtimes/index.js";

const CHROMIUM = findChromium();
if (!CHROMIUM) console.warn("SKIPPED: the dashboard talk tests need Debian's chromium (apt-get install chromium); none is on PATH.");

const DM_TOOL = "mcp__plugin_cotal_cotal__cotal_dm";
const QUESTION = `are you there, alice? ${process.pid}`;
const ANSWER = `yes ann, alice here ${process.pid}`;
// The docs' screenshots are refreshed on purpose (COTAL_DOCS_SCREENSHOTS=1); any other run writes
// them beside the other browser tests' (gitignored), so a test run leaves the tree as it found it.
const SHOTS = process.env.COTAL_DOCS_SCREENSHOTS === "1" ? join(projectRoot, "docs", "web") : join(projectRoot, "test-artifacts", "web");
/** How the dashboard says to get a person to write as. */
const HOW = "`cotal up` on the mesh host mints the person there (or pass --as-creds FILE with a person's credential); --read-only hides this note.";

let project: string;
let double: ModelDouble;
let shell: NodeJS.ProcessEnv;
let dash: DashboardLink;
let browser: BrowserContext;
let page: Page;
let evil: Server;
const cotal = (args: string[], timeoutMs = 60_000) => runCotal(args, { cwd: project, env: shell, timeoutMs });

/** A POST exactly as given: status and JSON body. */
async function post(path: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; body: { error?: string } }> {
  const r = await fetch(new URL(path, dash.base), { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });
  return { status: r.status, body: (await r.json().catch(() => ({}))) as { error?: string } };
}

async function history(channel: string): Promise<string> {
  return ok(await cotal(["history", channel, "--limit", "50"])).stdout;
}

/** A dashboard writing as bob, a person minted without the steer or approve right. */
async function bobsDashboard(): Promise<{ web: CotalProcess; d: DashboardLink }> {
  if (!existsSync(join(project, ".cotal", "creds", "bob.creds"))) ok(await cotal(["mint", "bob", "--profile", "person"]));
  const web = CotalProcess.spawn(["web", "--as-creds", join(project, ".cotal", "creds", "bob.creds"), "--port", String(await freePort())], {
    cwd: project,
    env: shell,
  });
  await until(() => web.lines.some((l) => l.startsWith("dashboard:")) || web.child.exitCode !== null, 30_000, `bob's dashboard to serve\n${web.stderr}`);
  expect(web.lines).toContain("writing:   as local.bob");
  return { web, d: dashboardLink(web.lines.join("\n")) };
}

async function shot(name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

describe.skipIf(!CHROMIUM)("the dashboard talks as the person", () => {
  beforeAll(async () => {
    await buildCli();
    project = await mkdtemp(join(tmpdir(), "cotal-web-talk-"));
    double = await ModelDouble.start([
      { when: (r) => newTurnText(r).includes(QUESTION), reply: [{ tool: DM_TOOL, input: { to: "ann", text: ANSWER } }] },
      { afterToolResult: DM_TOOL, reply: ["Answered ann."] },
    ]);
    // A persona in the manager's folder, for the steering tests' echo seats.
    mkdirSync(join(project, ".cotal", "agents"), { recursive: true });
    writeFileSync(join(project, ".cotal", "agents", "scout.md"), "---\nname: scout\n---\nYou are scout.\n");
    shell = { ...claudeEnv({ baseUrl: double.url, home: join(project, "home") }), NATS_SERVER_BIN: findNatsServer(), COTAL_SPACE: `talk${process.pid}` };
    ok(await cotal(["up", "-d", "--me", "ann", "--port", String(await freePort())], 120_000));
    ok(await cotal(["spawn", "-d", "--agent", "claude", "--name", "alice", "--wait-ms", "120000"], 150_000));
    dash = dashboardLink(ok(await cotal(["web", "-d", "--port", String(await freePort())])).stdout);
    browser = await launchChromium(CHROMIUM!);
    page = await browser.newPage();
    await page.setViewportSize({ width: 1200, height: 800 });
    await page.goto(dash.link);
  }, 300_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await new Promise((r) => (evil ? evil.close(r) : r(undefined)));
    if (project) await cotal(["down"]).catch(() => undefined);
    await double?.close();
    if (project) await rm(project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  }, 60_000);

  it("posts on a channel as ann, with a mention completed from the roster, and replies to a post; the page shows each receipt", async () => {
    await page.goto(`${dash.base}#/feed/general`);
    const box = page.getByTestId("compose-text");
    await box.click();
    await box.pressSequentially("hello @al");
    await page.getByTestId("mention-option").filter({ hasText: "@alice" }).waitFor();
    await box.press("Tab");
    expect(await box.inputValue()).toBe("hello @alice ");
    await box.pressSequentially("from the page");
    await page.getByTestId("compose-send").click();
    await expect
      .poll(() => page.getByTestId("receipt").textContent(), { timeout: 15_000 })
      .toMatch(/^Posted on #general as local\.ann: stored seq \d+ on general; \d+ other members? of #general online at send$/);
    await page.locator('[data-testid="post"]', { hasText: "hello @alice from the page" }).waitFor({ timeout: 15_000 });
    expect(await history("general")).toMatch(/ann: hello @alice from the page/);

    await page.locator('[data-testid="post"]', { hasText: "hello @alice from the page" }).getByTestId("reply").click();
    await expect.poll(() => page.getByTestId("replying").textContent()).toMatch(/^replying to local\.ann: hello @alice from the page/);
    await box.fill("and a reply to it");
    await page.getByTestId("compose-send").click();
    await page.locator('[data-testid="post"]', { hasText: "and a reply to it" }).waitFor({ timeout: 15_000 });
    const stored = JSON.parse(ok(await cotal(["history", "general", "--json"])).stdout) as Array<{
      text: string;
      message: { id: string; replyTo?: string; mentions?: string[] };
    }>;
    const first = stored.find((h) => h.text === "hello @alice from the page");
    expect(first?.message.mentions).toEqual(["alice"]);
    expect(stored.find((h) => h.text === "and a reply to it")?.message.replyTo).toBe(first?.message.id);
    await shot("feed-composer");
  }, 60_000);

  it("DMs alice from her view; her model answers with cotal_dm and the answer shows in ann's Inbox with the unread count; marking it read empties `cotal inbox`", async () => {
    await page.goto(`${dash.base}#/agent/local.alice`);
    await page.getByTestId("compose-text").fill(QUESTION);
    await page.getByTestId("compose-send").click();
    await expect
      .poll(() => page.getByTestId("receipt").textContent(), { timeout: 15_000 })
      .toMatch(/^DM to local\.alice as local\.ann: stored seq \d+; recipient (idle|working|waiting) at send$/);
    await shot("agent-dm");

    await expect.poll(() => page.getByTestId("inbox-count").textContent(), { timeout: 150_000, interval: 1_000 }).toBe("1");
    await page.goto(`${dash.base}#/inbox`);
    const dm = page.locator('[data-testid="inbox-dm"]', { hasText: ANSWER });
    await dm.waitFor({ timeout: 15_000 });
    expect(await dm.getAttribute("data-from")).toBe("local.alice");
    expect(await page.getByTestId("inbox-unread").textContent()).toBe("1 unread");
    // Shown in the page, still unread for the CLI.
    expect(ok(await cotal(["inbox"])).stdout).toContain(ANSWER);
    await shot("inbox");

    await page.getByTestId("mark-read").click();
    await expect.poll(() => page.getByTestId("inbox-count").textContent(), { timeout: 15_000 }).toBe("0");
    expect(ok(await cotal(["inbox"])).stdout).toMatch(/^No unread DMs for local\.ann\./);
  }, 240_000);

  it("a page on another origin cannot post (403, nothing stored)", async () => {
    const base = dash.base.replace(/\/$/, "");
    evil = createServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end(`<!doctype html><script>
        fetch(${JSON.stringify(`${base}/api/post`)}, { method: "POST", mode: "no-cors", credentials: "include", headers: { "Content-Type": "text/plain" }, body: JSON.stringify({ channel: "general", text: "EVIL-NO-CORS" }) });
        fetch(${JSON.stringify(`${base}/api/post`)}, { method: "POST", credentials: "include", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ channel: "general", text: "EVIL-JSON" }) }).catch(() => {});
      </script>`);
    });
    await new Promise<void>((r) => evil.listen(0, "127.0.0.1", r));
    const other = await browser.newPage();
    const refused = other.waitForResponse((r) => r.url() === `${base}/api/post` && r.request().method() === "POST");
    await other.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
    const res = await refused;
    expect(res.status()).toBe(403);
    await other.close();
    const h = await history("general");
    expect(h).not.toContain("EVIL");
  }, 60_000);

  it("a write without the token header gets 401, the cookie alone included; with it but from nowhere (no Origin) 403; a bad body 400 naming the field", async () => {
    const origin = dash.base.replace(/\/$/, "");
    const json = { "Content-Type": "application/json", Origin: origin };
    const body = { channel: "general", text: "NO-TOKEN" };
    expect((await post("api/post", json, body)).status).toBe(401);
    const cookie = await post("api/post", { ...json, Cookie: `cotal_web_${new URL(dash.base).port}=${dash.token}` }, body);
    expect(cookie.status).toBe(401);
    expect(cookie.body.error).toMatch(/token in a header.*cookie alone is not enough/);
    expect((await post("api/post", { "Content-Type": "application/json", "X-Cotal-Token": dash.token }, body)).status).toBe(403);
    expect((await post("api/post", { Origin: origin, "X-Cotal-Token": dash.token, "Content-Type": "text/plain" }, body)).status).toBe(415);
    const bad = await post("api/dm", { ...json, "X-Cotal-Token": dash.token }, { to: "no such.name!", text: "" });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/^to: .*; text: the message text must not be empty$/);
    expect(await history("general")).not.toContain("NO-TOKEN");
  }, 60_000);

  it("`cotal web --read-only` keeps the read-only dashboard: every write 405, no composer, the page says so", async () => {
    const ro = CotalProcess.spawn(["web", "--read-only", "--port", String(await freePort())], {
      cwd: project,
      env: shell,
    });
    try {
      await until(
        () => ro.lines.some((l) => l.startsWith("dashboard:")) || ro.child.exitCode !== null,
        30_000,
        `the read-only dashboard to serve\n${ro.stderr}`,
      );
      expect(ro.lines).toContain("writing:   off (--read-only)");
      const d = dashboardLink(ro.lines.join("\n"));
      const origin = d.base.replace(/\/$/, "");
      const r = await fetch(new URL("api/post", d.base), {
        method: "POST",
        headers: { "Content-Type": "application/json", Origin: origin, "X-Cotal-Token": d.token },
        body: JSON.stringify({ channel: "general", text: "READ-ONLY" }),
      });
      expect(r.status).toBe(405);
      expect(await (await fetchDashboard(d, "api/me")).json()).toEqual({ writes: "read-only" });
      const p = await browser.newPage();
      await p.goto(d.link + "#/feed/general");
      await expect.poll(() => p.getByTestId("writes-note").textContent()).toBe("Read-only: this dashboard was started with --read-only.");
      expect(await p.getByTestId("composer").count()).toBe(0);
      await p.close();
    } finally {
      await ro.stop();
    }
    expect(await history("general")).not.toContain("READ-ONLY");
  }, 60_000);

  it("with no person recorded, the dashboard is read-only and the page says why and how to fix it", async () => {
    const record = join(project, ".cotal", "person.json");
    renameSync(record, `${record}.away`);
    const web = CotalProcess.spawn(["web", "--port", String(await freePort())], { cwd: project, env: shell });
    try {
      await until(() => web.lines.some((l) => l.startsWith("dashboard:")) || web.child.exitCode !== null, 30_000, `the dashboard to serve\n${web.stderr}`);
      expect(web.lines).toContain("writing:   off (no person is recorded for this mesh (.cotal/person.json). " + HOW + ")");
      const d = dashboardLink(web.lines.join("\n"));
      const r = await fetch(new URL("api/post", d.base), {
        method: "POST",
        headers: { "Content-Type": "application/json", Origin: d.base.replace(/\/$/, ""), "X-Cotal-Token": d.token },
        body: JSON.stringify({ channel: "general", text: "NO-PERSON" }),
      });
      expect(r.status).toBe(405);
      const p = await browser.newPage();
      await p.goto(d.link + "#/feed/general");
      await expect.poll(() => p.getByTestId("writes-note").textContent()).toBe(`Read-only: no person is recorded for this mesh (.cotal/person.json). ${HOW}`);
      expect(await p.getByTestId("composer").count()).toBe(0);
      await p.close();
    } finally {
      await web.stop();
      renameSync(`${record}.away`, record);
    }
    expect(await history("general")).not.toContain("NO-PERSON");
  }, 60_000);

  it("steers: spawns an echo seat of persona scout from the Roster, restarts and stops it from its view, as ann; alice's terminal shows live, read-only", async () => {
    await page.goto(`${dash.base}#/roster`);
    await page.getByTestId("spawn-from").locator("option", { hasText: "persona scout" }).waitFor({ state: "attached", timeout: 15_000 });
    await page.getByTestId("spawn-from").selectOption("persona:scout");
    await page.getByTestId("spawn-name").fill("scout1");
    // The form offers the registry's runtimes and echo, as the server lists them: the page names none.
    expect(await page.getByTestId("spawn-runtime").locator("option").allTextContents()).toEqual([
      "(the persona's runtime)",
      ...RUNTIMES.map((r) => r.name),
      "echo",
    ]);
    await page.getByTestId("spawn-runtime").selectOption("echo");
    await page.getByTestId("spawn").click();
    await expect
      .poll(() => page.getByTestId("receipt").textContent(), { timeout: 60_000 })
      .toMatch(/^spawned scout1 from persona scout on manager \S+ \((launched|joined)\)$/);
    await page.locator('[data-testid="roster-row"][data-id="local.scout1"]').waitFor({ timeout: 30_000 });
    await expect
      .poll(() => page.locator('[data-testid="roster-row"][data-id="local.scout1"] [data-testid="spawned-by"]').textContent(), { timeout: 15_000 })
      .toBe("local.ann");
    await shot("spawn");
    const uidOf = async () =>
      ok(await cotal(["ps", "--json"]))
        .json<Array<{ seats: Array<{ name: string; uid: string; spawnedBy?: string }> }>>()
        .flatMap((m) => m.seats)
        .find((s) => s.name === "scout1");
    const first = await uidOf();
    expect(first?.spawnedBy).toBe("local.ann");

    await page.goto(`${dash.base}#/agent/local.scout1`);
    await page.getByTestId("restart").click();
    await expect.poll(() => page.getByTestId("receipt").textContent(), { timeout: 60_000 }).toMatch(/^scout1: restarted from persona scout on manager \S+/);
    const second = await uidOf();
    expect(second?.uid).toBeDefined();
    expect(second?.uid).not.toBe(first?.uid);
    await page.getByTestId("stop").click();
    await expect.poll(() => page.getByTestId("receipt").textContent(), { timeout: 30_000 }).toBe("scout1: stopped, retired");
    expect(await uidOf()).toBeUndefined();

    // alice is a Claude seat in the manager's tmux: her screen, as `cotal attach` would show it.
    await page.goto(`${dash.base}#/agent/local.alice`);
    const screen = async () => {
      const err = page.getByTestId("terminal-error");
      if (await err.count()) return `refused: ${await err.textContent()}`;
      return (await page.getByTestId("terminal").textContent()) ?? "";
    };
    // Claude Code's input box, as the seat's terminal shows it.
    await expect.poll(screen, { timeout: 30_000 }).toMatch(/[─━╭╰>]/);
    await shot("agent-terminal");
  }, 180_000);

  it("a person minted without the steer right is refused by the broker, and the page shows it", async () => {
    const { web, d } = await bobsDashboard();
    try {
      const p = await browser.newPage();
      await p.goto(d.link);
      await p.goto(`${d.base}#/agent/local.alice`);
      await p.getByTestId("stop").click();
      await expect
        .poll(() => p.getByTestId("refused").first().textContent(), { timeout: 15_000 })
        .toMatch(/^Refused \(403, permission-denied\): the broker refused it for this credential: .*manager\.\S+\.stop\.local\.bob/);
      await expect.poll(() => p.getByTestId("terminal-error").textContent(), { timeout: 15_000 }).toMatch(/^local\.bob may not steer seats/);
      await p.close();
    } finally {
      await web.stop();
    }
    // alice still runs.
    expect(ok(await cotal(["ps"])).stdout).toMatch(/alice\s+claude\s+joined/);
  }, 60_000);

  it("approvals: a supervised seat's ask is listed with its command; bob (no approve right) is refused not-allowed, verbatim; ann allows it and it runs; she denies the next and it does not", async () => {
    const made = join(project, "made-by-approval");
    double.push(
      { when: (r) => newTurnText(r).includes("TOUCH-WEB"), reply: [{ tool: "Bash", input: { command: `touch ${made}`, description: "make it" } }] },
      { afterToolResult: "Bash", reply: ["touched"] },
    );
    ok(await cotal(["spawn", "-d", "--name", "sup", "--posture", "supervised", "--prompt", "TOUCH-WEB", "--wait-ms", "150000"], 180_000));
    await page.goto(`${dash.base}#/approvals`);
    const row = page.locator('[data-testid="approval"][data-seat="local.sup"]');
    await row.waitFor({ timeout: 150_000 });
    expect(await row.textContent()).toContain(`touch ${made} (make it)`);
    await expect.poll(() => page.getByTestId("approvals-count").textContent()).toBe("1");
    await shot("approvals");
    expect(existsSync(made)).toBe(false);

    const { web, d } = await bobsDashboard();
    try {
      const p = await browser.newPage();
      await p.goto(d.link);
      await p.goto(`${d.base}#/approvals`);
      await p.locator('[data-testid="approval"][data-seat="local.sup"]').getByTestId("allow").click();
      await expect
        .poll(() => p.getByTestId("refused").textContent(), { timeout: 15_000 })
        .toMatch(/^Refused \(422, approval-not-allowed\): local\.sup refused the answer of local\.bob \(not-allowed\): /);
      await p.close();
    } finally {
      await web.stop();
    }
    expect(existsSync(made)).toBe(false);

    await row.getByTestId("allow").click();
    await expect
      .poll(() => page.getByTestId("receipt").textContent(), { timeout: 15_000 })
      .toMatch(new RegExp(`^allowed ap-[a-z2-7]{10}: local\\.sup Bash touch ${made.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
    await until(() => existsSync(made), 60_000, "the allowed command to run");
    await expect.poll(() => page.locator('[data-testid="approval"]').count(), { timeout: 15_000 }).toBe(0);

    // Another ask, denied in the page: the command does not run.
    const refused = join(project, "refused-by-approval");
    double.push(
      { when: (r) => newTurnText(r).includes("TOUCH-DENY"), reply: [{ tool: "Bash", input: { command: `touch ${refused}`, description: "make another" } }] },
      { afterToolResult: "Bash", reply: ["not touched"] },
    );
    ok(await cotal(["send", "dm", "sup", "TOUCH-DENY"]));
    const second = page.locator('[data-testid="approval"][data-seat="local.sup"]');
    await second.waitFor({ timeout: 150_000 });
    expect(await second.textContent()).toContain(`touch ${refused} (make another)`);
    await second.getByTestId("deny").click();
    await expect.poll(() => page.getByTestId("receipt").textContent(), { timeout: 15_000 }).toMatch(/^denied ap-[a-z2-7]{10}: local\.sup Bash touch /);
    await expect.poll(() => page.locator('[data-testid="approval"]').count(), { timeout: 15_000 }).toBe(0);
    // The model is told its Bash call was refused (an error result for it), and nothing ran.
    await until(
      () => double.requests.some((r) => newToolResults(r).some((t) => t.name === "Bash" && t.isError)),
      60_000,
      "the model to get the refusal as the Bash call's error result",
    );
    expect(existsSync(refused)).toBe(false);
  }, 420_000);
});
