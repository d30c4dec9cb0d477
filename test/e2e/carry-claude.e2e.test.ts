// Transcript carry end to end (issue #16) with the real `claude` against the model double: a
// session held on "the laptop" (its own HOME) is carried to a manager on "the host" through the
// mesh service's transfer bucket and resumed there as a managed tmux seat with
// `--resume <id> --fork-session` in the seat's private config dir. The resumed seat's first model
// request carries the earlier conversation; the fork wrote a new session, the carried transcript
// is untouched and the seat log records the carried session and digest.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { controlCaller, logger, XferService } from "../../broker/index.js";
import { findSession, listSessions } from "../../claude/index.js";
import type { ManagerService } from "../../manager/index.js";
import { localPrincipal, MANAGER_COMMANDS, names, SeatEvent, type SeatView } from "../../schemas/index.js";
import { carryFile } from "../../cli/carry.js";
import { startClaudeManager } from "../harness/claude-manager.js";
import { runClaude } from "../harness/claude-runner.js";
import { buildCli } from "../harness/cli.js";
import { TestMesh } from "../harness/mesh.js";
import { allText, isMainLoopRequest, lastUserText, ModelDouble } from "../harness/model-double.js";
import { until } from "../harness/until.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");
const EARLIER = "Remember the codeword PAPAYA-42 for later.";
const EARLIER_ANSWER = "Noted: the codeword is PAPAYA-42.";
const LATER = "Which codeword did I give you?";

let mesh: TestMesh;
let nc: NatsConnection;
let xfer: XferService;
let double: ModelDouble;
let root: string;
const managers: ManagerService[] = [];

beforeAll(async () => {
  await buildCli();
  root = mkdtempSync(join(tmpdir(), "cotal-carry-claude-"));
  mesh = await TestMesh.startStatic("carryc");
  nc = await mesh.rawConnection();
  xfer = await XferService.start(mesh.serviceConnection, mesh.space, logger("test-xfer"), { operatorOnly: true });
  double = await ModelDouble.start([
    { when: (r) => lastUserText(r).includes(EARLIER), reply: [EARLIER_ANSWER] },
    { when: (r) => lastUserText(r).includes(LATER), reply: ["It was PAPAYA-42."] },
  ]);
}, 180_000);

afterAll(async () => {
  for (const m of managers) await m.stopWithSeats(operator).catch(() => undefined);
  xfer?.stop();
  await double?.close();
  await mesh?.close();
  rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe("transcript carry with the real claude", () => {
  it("a session from the laptop resumes as a managed seat on the host: its first request carries the earlier conversation", async () => {
    // The laptop: a real session, its transcript under the laptop's Claude config dir.
    const laptopHome = mkdtempSync(join(root, "laptop-"));
    const earlier = await runClaude({ baseUrl: double.url, prompt: EARLIER, home: laptopHome, cwd: mkdtempSync(join(root, "laptop-work-")) });
    expect(earlier.code, earlier.stderr).toBe(0);
    const session = earlier.json!.session_id;
    const found = findSession(join(laptopHome, ".claude"), session);
    expect(found, `the laptop's transcript of ${session}`).toBeDefined();
    const carriedBytes = readFileSync(found!.file);

    // The host: a manager with the real claude under tmux.
    const { m, stateDir } = await startClaudeManager(mesh, nc, {
      root,
      instance: "host",
      baseUrl: double.url,
      claude: { screenTimeoutMs: 30_000 },
      over: { heartbeatMs: 1_000, caller: operator },
    });
    managers.push(m);
    const carried = await carryFile({ nc, space: mesh.space, me: operator }, { instance: "host", session, file: found!.file });
    expect(carried).toMatchObject({ sent: carriedBytes.length, size: carriedBytes.length });

    const work = mkdtempSync(join(root, "host-work-"));
    await callManager(
      nc,
      mesh.space,
      "spawn",
      operator,
      { agent: "claude", name: "forked", cwd: work, resume: session, claim: carried.claim, prompt: LATER },
      { target: "host", timeoutMs: 30_000 },
    );
    let view: SeatView | undefined;
    await until(
      async () => {
        const ps = await callManager(nc, mesh.space, "ps", operator, { all: true }, { target: "host" });
        view = ps.seats.find((s) => s.name === "forked");
        return view?.state === "joined" || view?.state === "retired";
      },
      90_000,
      "the forked seat to join",
      250,
    );
    expect(view!.state, JSON.stringify(view)).toBe("joined");
    expect(view!.carried).toEqual({ session, digest: carried.digest });

    const resumedTurn = () => double.requests.find((r) => isMainLoopRequest(r) && lastUserText(r).includes(LATER));
    await until(() => resumedTurn() !== undefined, 90_000, "the resumed seat's first request", 250);
    const text = allText(resumedTurn()!);
    expect(text).toContain(EARLIER);
    expect(text).toContain(EARLIER_ANSWER);

    // The fork is a new session beside the carried one, whose bytes are untouched.
    const config = join(stateDir, "seats", "forked", "claude-config");
    // Claude writes the fork's transcript as the resumed turn goes on: wait for it rather than race it.
    await until(() => listSessions(config).length >= 2, 60_000, "the fork's own transcript beside the carried one", 250);
    expect(listSessions(config).map((s) => s.session)).toContain(session);
    expect(readFileSync(findSession(config, session)!.file).equals(carriedBytes)).toBe(true);

    // The seat log's requested event (the first in this fresh space) records what it forked.
    const first = await (await mesh.dataJsm()).streams.getMessage(names.seatsStream(mesh.space), { seq: 1 });
    expect(SeatEvent.parse(JSON.parse(new TextDecoder().decode(first!.data)))).toMatchObject({
      type: "requested",
      seat: "local.forked",
      carried: { session, digest: carried.digest },
    });
  }, 300_000);
});
