// cotal web's pure parts: the bind-address rule, the Host check, flag validation (exit 2 with the
// flag named), the stuck-queue rule, the timeline fold, and Markdown that no message can turn into markup.
import { describe, expect, it } from "vitest";
import { exitCodeOf, EXIT } from "../../cli/terminal/errors.js";
import { parseInput } from "../../cli/terminal/validate.js";
import { WebFlags } from "../../cli/commands/web.js";
import { bindScope, hostHeaderAllowed, isStuck, renderMarkdown, spawnerOf, STUCK_AFTER_MS, TimelineFolder } from "../../web/index.js";
import { SeatEvent } from "../../schemas/index.js";

describe("the bind-address rule", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.3.2.1", "loopback"],
    ["localhost", "loopback"],
    ["::1", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["0.0.0.0", "wildcard"],
    ["::", "wildcard"],
    ["::0", "wildcard"],
    ["0:0:0:0:0:0:0:0", "wildcard"],
    ["192.168.1.20", "address"],
    ["fe80::1", "address"],
  ])("%s listens on %s", (host, scope) => {
    expect(bindScope(host)).toEqual({ scope });
  });

  it.each(["", "*", "0", "example.com", "my-laptop", "[::]", "[::1]", "127.0.0.1:80"])(
    "%j is refused: only an IP literal or localhost names what is bound",
    (host) => {
      const r = bindScope(host);
      expect(r).toHaveProperty("problem");
      expect((r as { problem: string }).problem).toMatch(/--host 0\.0\.0\.0 or --host ::/);
    },
  );

  it("a loopback dashboard answers only Host headers that name a loopback host (DNS rebinding)", () => {
    for (const h of ["127.0.0.1:7799", "localhost:7799", "localhost", "[::1]:7799", "127.0.0.2"]) expect(hostHeaderAllowed(h, "loopback"), h).toBe(true);
    for (const h of ["evil.example:7799", "rebind.attacker.test", "192.168.1.2:7799", "", undefined])
      expect(hostHeaderAllowed(h, "loopback"), String(h)).toBe(false);
    expect(hostHeaderAllowed("anything.example", "wildcard")).toBe(true);
  });
});

describe("cotal web flags", () => {
  const parse = (raw: Record<string, unknown>) => parseInput(WebFlags, raw, { port: "--port", host: "--host" });
  const refusal = (raw: Record<string, unknown>): { code: number; message: string } => {
    try {
      parse(raw);
    } catch (err) {
      return { code: exitCodeOf(err), message: (err as Error).message };
    }
    throw new Error("not refused");
  };

  it("defaults to 127.0.0.1:7799", () => {
    expect(parse({})).toMatchObject({ port: 7799, host: "127.0.0.1" });
    expect(parse({ port: "8080", host: "::1", detach: true })).toMatchObject({ port: 8080, host: "::1", detach: true });
  });

  it("refuses a bad port or host with exit 2, naming the flag and the fix", () => {
    for (const port of ["0", "65536", "http", "-1", "80.5"]) {
      const r = refusal({ port });
      expect(r.code).toBe(EXIT.usage);
      expect(r.message).toMatch(/--port/);
    }
    const r = refusal({ host: "dashboard.local" });
    expect(r.code).toBe(EXIT.usage);
    expect(r.message).toMatch(/--host: host must be an IP address/);
    expect(r.message).toMatch(/--host 0\.0\.0\.0/);
  });
});

describe("the stuck-queue signal", () => {
  const now = 1_000_000;
  const old = now - STUCK_AFTER_MS - 1;
  it("is raised only for mail kept waiting while the seat sat idle", () => {
    expect(isStuck("idle", old, { count: 1, oldestAt: old }, now)).toBe(true);
    // Idle only just now (it was working when the mail came): not yet held against it.
    expect(isStuck("idle", now - 1_000, { count: 1, oldestAt: old }, now)).toBe(false);
    // Fresh mail; a working, waiting or offline seat; no mail; pending not readable.
    expect(isStuck("idle", old, { count: 1, oldestAt: now - 1_000 }, now)).toBe(false);
    for (const status of ["working", "waiting", "offline"]) expect(isStuck(status, old, { count: 3, oldestAt: old }, now)).toBe(false);
    expect(isStuck("idle", old, { count: 0 }, now)).toBe(false);
    expect(isStuck("idle", old, undefined, now)).toBe(false);
  });
});

describe("the timeline fold", () => {
  it("folds runs, prompt and reply text, tool calls by name and failures, across frames", () => {
    const folder = new TimelineFolder();
    const frame = (seq: number, events: object[]) => ({
      kind: "ag-ui.frame" as const,
      protocol: "ag-ui" as const,
      threadId: "s",
      runId: "r1",
      epoch: 1,
      seq,
      events: events as never,
    });
    const a = folder.fold(
      frame(1, [
        { type: "RUN_STARTED" },
        { type: "TEXT_MESSAGE_START", messageId: "m", role: "user" },
        { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "Please **build**" },
      ]),
      1,
    );
    const b = folder.fold(
      frame(2, [
        { type: "TEXT_MESSAGE_END", messageId: "m" },
        { type: "TOOL_CALL_START", toolCallId: "t", toolCallName: "Bash" },
        { type: "TOOL_CALL_END", toolCallId: "t" },
        { type: "RUN_ERROR", message: "run failed" },
      ]),
      2,
    );
    expect([...a, ...b].map((e) => [e.kind, e.tool ?? e.html ?? ""])).toEqual([
      ["run-started", ""],
      ["prompt", "<p>Please <strong>build</strong></p>"],
      ["tool-started", "Bash"],
      ["tool-ended", "Bash"],
      ["run-failed", "<p>run failed</p>"],
    ]);
  });
});

describe("Markdown in messages", () => {
  const ALLOWED = new Set(["p", "br", "strong", "em", "code", "pre", "ul", "li", "a"]);
  /** Every tag in the output is one of ours, and a link carries only our attributes. */
  function onlyOurMarkup(html: string): void {
    for (const m of html.matchAll(/<\/?([a-zA-Z0-9]+)([^>]*)>/g)) {
      expect(ALLOWED.has(m[1]!), `tag <${m[1]}> in ${html}`).toBe(true);
      const attrs = m[2]!.trim();
      if (m[1] === "a" && !m[0].startsWith("</")) expect(attrs, html).toMatch(/^href="(https?:\/\/|mailto:)[^"]*" rel="noopener noreferrer" target="_blank"$/);
      else expect(attrs, html).toBe("");
    }
  }

  it("renders the small subset: bold, emphasis, code, code blocks, lists, links", () => {
    expect(renderMarkdown("**ship** it *now* with `npm ci`")).toBe("<p><strong>ship</strong> it <em>now</em> with <code>npm ci</code></p>");
    expect(renderMarkdown("- one\n- two")).toBe("<ul><li>one</li><li>two</li></ul>");
    expect(renderMarkdown("```\n<b>x</b>\n```")).toBe("<pre><code>&lt;b&gt;x&lt;/b&gt;</code></pre>");
    expect(renderMarkdown("[docs](https://example.com/a?b=1&c=2)")).toBe(
      '<p><a href="https://example.com/a?b=1&amp;c=2" rel="noopener noreferrer" target="_blank">docs</a></p>',
    );
  });

  it.each([
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    '[x](https://a.example/" onmouseover="alert(1))',
    "[x](https://a.example/'onmouseover='alert(1))",
    '<a href="javascript:alert(1)">x</a>',
    "**<svg onload=alert(1)>**",
    "`</code><script>x</script>`",
    "```\n</pre><iframe src=//evil>\n```",
    "\u0000" + "0\u0000<b>placeholder</b>",
    "[`a`](https://x.example/`b`)",
    "<style>body{display:none}</style>",
    "&lt;script&gt; and &#60;script&#62;",
  ])("no markup from a message: %j", (text) => {
    const html = renderMarkdown(text);
    onlyOurMarkup(html);
    expect(html).not.toMatch(/<(script|img|svg|iframe|style)|href="(?!https?:|mailto:)/i);
  });
});

describe("who a seat answers to, from its seat log (never its card)", () => {
  const base = { seat: "local.h1", uid: "a".repeat(26), epoch: 0, ts: 1, manager: "m1" };
  const ev = (e: Record<string, unknown>) => SeatEvent.parse({ ...base, ...e });
  it("its spawner, then whom it was handed to; none for the operator's seats or once retired", () => {
    expect(spawnerOf(undefined)).toBeUndefined();
    expect(spawnerOf([ev({ type: "requested", agent: "echo" })])).toBeUndefined();
    const spawned = ev({ type: "requested", agent: "echo", spawnedBy: "local.sam" });
    expect(spawnerOf([spawned, ev({ type: "joined" })])).toBe("local.sam");
    expect(spawnerOf([spawned, ev({ type: "handed-over", from: "local.sam", to: "local.tess" })])).toBe("local.tess");
    expect(spawnerOf([spawned, ev({ type: "handed-over", from: "local.sam" })])).toBeUndefined();
    expect(spawnerOf([spawned, ev({ type: "retired", reason: "stopped" })])).toBeUndefined();
  });
});
