// Transcript carry on the user's path (docs/manager.md, Transcript carry), through the
// shipped CLI only: a real `claude -p` session on "the laptop" (a HOME of its own) against the
// model double, then, from the laptop's shell, `cotal spawn -d --resume <session> --on <instance>
// --prompt …` to the manager `cotal up -d` started. The transcript is carried (the digest is the
// laptop file's sha256), the seat forks it (`ps --json` says what it carried), its first model
// request carries the earlier conversation, the fork is a new session beside the carried copy,
// whose bytes are untouched.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findSession, listSessions } from "../../claude/index.js";
import type { SeatView } from "../../schemas/index.js";
import { runClaude } from "../harness/claude-runner.js";
import { allText, isMainLoopRequest, lastUserText, newTurnText } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";
import { UserPath } from "../harness/user-path.js";

const EARLIER = "Remember the codeword PAPAYA-42 for later.";
const EARLIER_ANSWER = "Noted: the codeword is PAPAYA-42.";
const LATER = "Which codeword did I give you?";

let u: UserPath;

beforeAll(async () => {
  u = await UserPath.start({
    prefix: "cotal-user-carry-",
    script: [
      { when: (r) => lastUserText(r).includes(EARLIER), reply: [EARLIER_ANSWER] },
      { when: (r) => newTurnText(r).includes(LATER), reply: ["It was PAPAYA-42."] },
    ],
  });
}, 120_000);

afterAll(async () => {
  await u?.close();
});

describe("transcript carry through the CLI", () => {
  it("cotal spawn -d --resume <session> --on <instance> carries a laptop session; the seat resumes it with the earlier conversation", async () => {
    // The laptop: a real session, its transcript under the laptop's ~/.claude.
    const laptopHome = join(u.project, "laptop-home");
    const laptop = u.userShell(laptopHome);
    const laptopWork = join(u.project, "laptop-work");
    mkdirSync(laptopWork, { recursive: true });
    const earlier = await runClaude({ baseUrl: u.double.url, prompt: EARLIER, home: laptopHome, cwd: laptopWork });
    expect(earlier.code, earlier.stderr).toBe(0);
    const session = earlier.json!.session_id;
    const found = findSession(join(laptopHome, ".claude"), session);
    expect(found, `the laptop's transcript of ${session}`).toBeDefined();
    const carriedBytes = readFileSync(found!.file);
    const digest = `sha256:${createHash("sha256").update(carriedBytes).digest("hex")}`;

    // The host: the manager `cotal up` started, as `cotal ps` names it.
    const [host] = (await u.ok(["ps", "--json"])).json<Array<{ instance: string }>>();
    const r = await u.cotal(
      ["spawn", "-d", "--resume", session, "--on", host!.instance, "--name", "forked", "--prompt", LATER, "--wait-ms", "90000", "--json"],
      laptop,
    );
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.json()).toMatchObject({
      name: "forked",
      outcome: "started",
      carried: { session, digest, size: carriedBytes.length, sent: carriedBytes.length },
      seat: { state: "joined", carried: { session, digest } },
    });

    const resumedTurn = () => u.double.requests.find((q) => isMainLoopRequest(q) && newTurnText(q).includes(LATER));
    await until(() => resumedTurn() !== undefined, 90_000, "the resumed seat's first request", 250);
    const text = allText(resumedTurn()!);
    expect(text).toContain(EARLIER);
    expect(text).toContain(EARLIER_ANSWER);

    const ps = (await u.ok(["ps", "--json"])).json<Array<{ seats: SeatView[] }>>();
    expect(ps[0]!.seats.find((s) => s.name === "forked")).toMatchObject({ state: "joined", carried: { session, digest } });

    // On the host, the fork is a new session beside the carried copy, whose bytes are untouched.
    const config = join(u.project, ".cotal", "manager", "seats", "forked", "claude-config");
    await until(() => listSessions(config).length >= 2, 60_000, "the fork's own transcript beside the carried one", 250);
    expect(listSessions(config).map((s) => s.session)).toContain(session);
    expect(readFileSync(findSession(config, session)!.file).equals(carriedBytes)).toBe(true);
  }, 240_000);
});
