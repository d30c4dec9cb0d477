// What people see of seats and senders on a mesh from `cotal up`, through the
// shipped CLI and, for the dashboard, a real browser:
// - an echo seat idle for longer than the 6 s age the views used to judge by is current in
//   `cotal web` (/api/state, the page) and `cotal console` (plain lines, and its terminal UI in
//   tmux): presence records are written only on change (protocol 0.3), so a record's age says
//   nothing;
// - a seat that stops beating shows offline once the mesh service's liveness judge deletes its
//   key, and idle again once it beats (SIGSTOP, then SIGCONT, of the seat's process);
// - the operator's `--as alice --impersonate` post says "sent by the operator" in /api/channel
//   and on the page, as in every other view;
// - a `listen` whose join failed leaves no presence behind: its name is offline at once, and the
//   next `listen` as it is not refused as a second listener.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findChromium, launchChromium } from "../harness/browser.js";
import { buildCli, CotalProcess, freePort, runCotal, type CliResult } from "../harness/cli.js";
import { TmuxConsole } from "../harness/tmux-console.js";
import { until } from "../../testbed/until.js";
import { dashboardLink, fetchDashboard, type DashboardLink } from "../harness/dashboard-link.js";

const CHROMIUM = findChromium();
if (!CHROMIUM) console.warn("SKIPPED: the seat-views browser tests need Debian's chromium (apt-get install chromium); none is on PATH.");

/** What the views used to take for a dead seat: a record older than this. */
const OLD_STALE_MS = 6_000;

interface Row {
  id: string;
  status: string;
  stale: boolean;
  seenAt?: number;
}
interface State {
  now: number;
  roster: Row[];
}

let project: string;
let browser: BrowserContext;
let web: CotalProcess;
let url: string;
let dash: DashboardLink;
let console_: CotalProcess;
let tui: TmuxConsole;
const cotal = (...args: string[]) => runCotal(args, { cwd: project, timeoutMs: 60_000 });

function ok(r: CliResult, what: string): CliResult {
  expect(r.code, `${what}: exit code; stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

async function api<T>(path: string): Promise<T> {
  return (await (await fetchDashboard(dash, path)).json()) as T;
}

async function rowOf(id: string): Promise<Row | undefined> {
  return (await api<State>("api/state")).roster.find((r) => r.id === id);
}

async function seatPid(name: string): Promise<number> {
  const managers = ok(await cotal("ps", "--json"), "ps").json<Array<{ seats: Array<{ name: string; pid?: number }> }>>();
  const pid = managers.flatMap((m) => m.seats).find((s) => s.name === name)?.pid;
  if (!pid) throw new Error(`no pid for seat ${name} in cotal ps`);
  return pid;
}

async function rosterRowText(page: Page, id: string): Promise<string> {
  return (
    (await page
      .locator(`[data-testid=roster-row][data-id="${id}"]`)
      .textContent({ timeout: 2_000 })
      .catch(() => null)) ?? ""
  );
}

describe.skipIf(!CHROMIUM)("seats and senders as people see them", () => {
  beforeAll(async () => {
    await buildCli();
    project = await mkdtemp(join(tmpdir(), "cotal-seat-views-"));
    ok(await cotal("up", "--detach", "--port", String(await freePort())), "up");
    ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "echo1"), "spawn echo1");
    web = CotalProcess.spawn(["web", "--port", String(await freePort())], { cwd: project });
    await until(() => web.lines.some((l) => l.startsWith("dashboard:")) || web.child.exitCode !== null, 30_000, `the dashboard to serve\n${web.stderr}`);
    dash = dashboardLink(web.lines.join("\n"));
    url = dash.link;
    // The console as a person watching: plain lines (stdout is not a terminal).
    console_ = CotalProcess.spawn(["console", "--plain"], { cwd: project });
    await until(() => console_.stderr.includes("Live from here"), 30_000, `the console went live\n${console_.stderr}`);
    // And as it opens on a terminal: its terminal UI.
    tui = TmuxConsole.start(join(project, "tmux.sock"), project, ["console"]);
    browser = await launchChromium(CHROMIUM!);
  }, 180_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await console_?.stop().catch(() => undefined);
    tui?.kill();
    await web?.stop().catch(() => undefined);
    if (project) {
      await cotal("down").catch(() => undefined);
      await rm(project, { recursive: true, force: true });
    }
  }, 60_000);

  it("an idle seat stays current past the old age threshold; one that stops beating is offline once the judge deletes its key, and back when it beats", async () => {
    await until(async () => (await rowOf("local.echo1"))?.status === "idle", 30_000, "echo1 idle on the dashboard");
    // Idle, with no presence write for longer than the views used to allow.
    let row: Row | undefined;
    let state: State | undefined;
    await until(
      async () => {
        state = await api<State>("api/state");
        row = state.roster.find((r) => r.id === "local.echo1");
        return !!row?.seenAt && state.now - row.seenAt > OLD_STALE_MS + 2_000;
      },
      30_000,
      "echo1's record to be older than the old threshold",
    );
    expect(row, "echo1 is current on the dashboard").toMatchObject({ status: "idle", stale: false });

    const page = await browser.newPage();
    try {
      await page.goto(`${url}#/roster`);
      await page.locator('[data-testid=roster-row][data-id="local.echo1"]').waitFor({ timeout: 15_000 });
      await until(async () => /idle/.test(await rosterRowText(page, "local.echo1")), 10_000, "the page shows echo1 idle");
      expect(await page.locator('[data-testid=roster-row][data-id="local.echo1"] .badge.stale').count()).toBe(0);
      await expect(page.locator('[data-testid=roster-row][data-id="local.echo1"]').getAttribute("class")).resolves.not.toContain("stale");

      // Any roster change re-renders every console line: echo1's must not turn [stale].
      ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "echo2"), "spawn echo2");
      await until(() => console_.lines.some((l) => /^roster echo2 idle/.test(l)), 30_000, `the console shows echo2 idle\n${console_.lines.join("\n")}`);
      expect(
        console_.lines.filter((l) => /echo1/.test(l) && /stale/.test(l)),
        console_.lines.join("\n"),
      ).toEqual([]);
      const screen = await tui.waitFor(/│ *echo1 idle/, "the console's terminal UI shows echo1 idle");
      expect(screen).not.toMatch(/stale\S* echo1/);

      // echo1 stops beating (frozen, as a hung or killed process looks to the mesh).
      const pid = await seatPid("echo1");
      process.kill(pid, "SIGSTOP");
      try {
        await until(async () => (await rowOf("local.echo1"))?.status === "offline", 30_000, "the dashboard shows echo1 offline once the judge deleted its key");
        expect(await rowOf("local.echo1")).toMatchObject({ stale: true });
        await until(async () => /offline/.test(await rosterRowText(page, "local.echo1")), 10_000, "the page shows echo1 offline");
        await until(() => console_.lines.some((l) => /^roster echo1 offline/.test(l)), 10_000, `the console shows echo1 offline\n${console_.lines.join("\n")}`);
        await tui.waitFor(/│ *echo1 offline/, "the console's terminal UI shows echo1 offline");
      } finally {
        process.kill(pid, "SIGCONT");
      }
      // It sees its key deleted and writes its record again: online in every view.
      await until(async () => (await rowOf("local.echo1"))?.status === "idle", 30_000, "the dashboard shows echo1 idle again");
      await until(async () => /idle/.test(await rosterRowText(page, "local.echo1")), 10_000, "the page shows echo1 idle again");
      const offlineAt = console_.lines.findIndex((l) => /^roster echo1 offline/.test(l));
      await until(
        () => console_.lines.slice(offlineAt).some((l) => /^roster echo1 idle/.test(l)),
        10_000,
        () => `the console shows echo1 idle again\n${console_.lines.join("\n")}`,
      );
      await tui.waitFor(/│ *echo1 idle/, "the console's terminal UI shows echo1 idle again");
    } finally {
      await page.close();
    }
  }, 180_000);

  it("the operator's impersonated post says who sent it, in /api/channel and on the page", async () => {
    ok(await cotal("send", "msg", "general", "hello from the operator", "--as", "alice", "--impersonate"), "send");
    const { posts } = await api<{ posts: Array<{ from: string; sentBy?: string; html: string }> }>("api/channel?name=general");
    expect(posts.find((p) => p.html.includes("hello from the operator"))).toMatchObject({ from: "local.alice", sentBy: "local.cotal_cli" });
    const page = await browser.newPage();
    try {
      for (const view of ["feed/general", "feed"]) {
        await page.goto(`${url}#/${view}`);
        const post = page.locator("[data-testid=post]", { hasText: "hello from the operator" });
        await post.waitFor({ timeout: 15_000 });
        await expect(post.locator("[data-testid=from]").textContent()).resolves.toBe("local.alice");
        await expect(post.locator("[data-testid=sent-by]").textContent()).resolves.toBe(" (sent by the operator local.cotal_cli)");
      }
    } finally {
      await page.close();
    }
  }, 60_000);

  it("a listen whose join failed leaves no presence behind, and the next listen as it is not refused", async () => {
    ok(await cotal("mint", "carol", "--profile", "agent", "--allow-subscribe", "lobby", "--allow-publish", "lobby"), "mint carol");
    const creds = join(project, ".cotal", "creds", "carol.creds");
    const refused = await cotal("listen", "--creds", creds, "--channel", "general");
    expect(refused.code, refused.stderr).toBe(5);
    expect(refused.stderr).toContain("Not allowed to read channel general");
    // At once, not after the liveness window: the failed listen said goodbye.
    const roster = ok(await cotal("roster", "--json"), "roster").json<Array<{ id: string; status: string }>>();
    expect(roster.find((r) => r.id === "local.carol")?.status ?? "offline").toBe("offline");
    const again = CotalProcess.spawn(["listen", "--creds", creds, "--channel", "lobby", "--json"], { cwd: project });
    try {
      await again.waitForJson<{ type: string }>((l) => l.type === "ready", 20_000, "the next listen as carol to be ready");
    } finally {
      await again.stop();
    }
  }, 60_000);
});
