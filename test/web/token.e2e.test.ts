// The hole this closes: the dashboard showed DM bodies to anyone on the host (`curl
// http://127.0.0.1:7799/api/agent?id=local.bob`). Now it needs the secret the starting user has,
// as Jupyter does: a token in the printed link, kept in an HttpOnly SameSite=Strict cookie. Tried
// as the local attacker would (plain HTTP, no token, a wrong one, another dashboard's cookie) and
// as the user does (the link, the cookie, `cotal web --url`), through the shipped CLI.
import { readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, freePort, runCotal, type CliResult } from "../harness/cli.js";
import { dashboardLink, fetchDashboard, type DashboardLink } from "../harness/dashboard-link.js";

let project: string;
let dash: DashboardLink;
const SECRET = `SECRET-DM-${Date.now()}`;
const cotal = (...args: string[]) => runCotal(args, { cwd: project, timeoutMs: 60_000 });

function ok(r: CliResult): CliResult {
  expect(r.code, `exit code; stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

/** A raw GET with exactly these headers: status, headers and body. */
function get(
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const u = new URL(path, dash.base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

const ROUTES = ["/", "/app.js", "/app.css", "/api/state", "/api/agent?id=local.bob", "/api/channel?name=general", "/events"];

describe("cotal web needs the token the starting user was given", () => {
  beforeAll(async () => {
    await buildCli();
    project = await mkdtemp(join(tmpdir(), "cotal-web-token-"));
    ok(await cotal("up", "--detach", "--port", String(await freePort())));
    ok(await cotal("send", "dm", "bob", SECRET, "--as", "carol", "--impersonate"));
    dash = dashboardLink(ok(await cotal("web", "--detach", "--port", String(await freePort()))).stdout);
  }, 120_000);

  afterAll(async () => {
    if (project) {
      await cotal("down").catch(() => undefined);
      await rm(project, { recursive: true, force: true });
    }
  }, 60_000);

  it("answers 401 on every route without the token, with a wrong one, or with another port's cookie, and shows nothing of the mesh", async () => {
    const wrong = "A".repeat(dash.token.length);
    const otherPort = Number(new URL(dash.base).port) + 1;
    for (const route of ROUTES) {
      const attempts: Record<string, string>[] = [
        {},
        { Authorization: `Bearer ${wrong}` },
        { Cookie: `cotal_web_${new URL(dash.base).port}=${wrong}` },
        { Cookie: `cotal_web_${otherPort}=${dash.token}` },
      ];
      for (const headers of attempts) {
        const r = await get(route, headers);
        expect(r.status, `${route} with ${JSON.stringify(headers)}`).toBe(401);
        expect(r.body).not.toContain(SECRET);
        expect(r.body).not.toContain('local.bob"');
      }
      const q = await get(`${route}${route.includes("?") ? "&" : "?"}token=${wrong}`);
      expect(q.status, `${route} with a wrong ?token`).toBe(401);
    }
    const refused = await get("/api/agent?id=local.bob");
    expect(JSON.parse(refused.body)).toEqual({ error: expect.stringMatching(/needs its token.*cotal web --url/) });
  });

  it("the printed link sets an HttpOnly, SameSite=Strict cookie and moves the token out of the address; the cookie then reads", async () => {
    const r = await get(`/?token=${dash.token}`);
    expect(r.status).toBe(303);
    expect(r.headers.location).toBe("/");
    const cookie = String(r.headers["set-cookie"]);
    expect(cookie).toMatch(new RegExp(`^cotal_web_${new URL(dash.base).port}=${dash.token}; Path=/; HttpOnly; SameSite=Strict$`));
    const page = await get("/", { Cookie: cookie.split(";")[0]! });
    expect(page.status).toBe(200);
    expect(page.body).toMatch(/<html/i);
    const agent = await get("/api/agent?id=local.bob", { Cookie: cookie.split(";")[0]! });
    expect(agent.status).toBe(200);
    expect(agent.body).toContain(SECRET); // the admin dashboard shows DM bodies to its user
  });

  it("the token in an API address is not taken (only the link's / moves it into a cookie)", async () => {
    const r = await get(`/api/agent?id=local.bob&token=${dash.token}`);
    expect(r.status).toBe(401);
    expect(r.body).not.toContain(SECRET);
  });

  it("a bearer token reads the API; `cotal web --url` prints the same link; the token file is 0600 and the log holds no token", async () => {
    expect((await fetchDashboard(dash, "api/state")).status).toBe(200);
    expect(ok(await cotal("web", "--url")).stdout.trim()).toBe(dash.link);
    const file = join(project, ".cotal", "creds", "web.token");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, "utf8").trim()).toBe(dash.token);
    expect(readFileSync(join(project, ".cotal", "logs", "web.log"), "utf8")).not.toContain(dash.token);
  });
});
