// Typing a spawn's opening prompt is not delivering it (manager/prompt-delivery.ts): a TUI on a
// starved host may keep the text in its input box or drop it. A terminal here behaves as such a TUI
// does, scripted per case; the manager's check must see the prompt taken in each, and press nothing
// on a screen that is not the input screen.
import { describe, expect, it } from "vitest";
import { deliverPrompt, type SeatTerminal } from "../../manager/internal.js";
import type { ScreenState } from "../../runtime/index.js";

const PROMPT = "Start the ring: pass it to bob over Cotal.";
const FOOTER = "⏵⏵ don't ask on (shift+tab to cycle)";
const classify = (s: string): ScreenState =>
  /Do you want to proceed\?/.test(s) ? { kind: "blocked", name: "a permission prompt" } : s.includes(FOOTER) ? { kind: "ready" } : { kind: "unknown" };

/** A TUI's input box: what was typed sits there until an Enter it does not swallow sends it (`taken`). */
class ScriptedTui implements SeatTerminal {
  input = "";
  takenAt?: number;
  readonly keys: string[] = [];
  /** How many Enters it reads as part of a paste (kept as a newline), and how many typed texts it drops. */
  constructor(
    private swallowEnters = 0,
    private dropTexts = 0,
    private dialog = false,
  ) {}
  /** Lines scrolled off the top (read only with history). */
  scrollback = "";
  async screen(history = 0): Promise<string> {
    const visible = this.dialog ? "Bash command\n  rm -rf build\nDo you want to proceed?\n❯ 1. Yes\n" : `❯ ${this.input}\n${FOOTER}\n`;
    return history > 0 ? `${this.scrollback}${visible}` : visible;
  }
  async type(text: string): Promise<void> {
    this.keys.push(`text:${text}`);
    if (this.dropTexts > 0) this.dropTexts--;
    else this.input += text;
    await this.submit();
  }
  async submit(): Promise<void> {
    this.keys.push("Enter");
    if (this.swallowEnters > 0) {
      this.swallowEnters--;
      return;
    }
    if (this.input.trim()) {
      this.input = "";
      this.takenAt = Date.now();
    }
  }
  /** A person has the terminal open (`cotal attach`). */
  person = false;
  async attached(): Promise<boolean> {
    return this.person;
  }
  async close(): Promise<void> {}
}

const deliver = (tui: ScriptedTui, retype = true) =>
  deliverPrompt(PROMPT, { terminal: tui, classify, retype, taken: (at) => tui.takenAt !== undefined && tui.takenAt >= at, checksMs: [50, 50, 50] });

describe("a spawn's opening prompt is delivered, not only typed", () => {
  it("a TUI that takes it at once gets it once, and nothing more is pressed", async () => {
    const tui = new ScriptedTui();
    expect(await deliver(tui)).toEqual({ taken: true });
    expect(tui.keys).toEqual([`text:${PROMPT}`, "Enter"]);
  });

  it("text kept in the input box (its Enter read as part of a paste) is sent with Enter, not typed twice", async () => {
    const tui = new ScriptedTui(1);
    expect(await deliver(tui)).toEqual({ taken: true });
    expect(tui.keys).toEqual([`text:${PROMPT}`, "Enter", "Enter"]);
  });

  it("text the TUI dropped is typed again, once, when the runtime's hooks report every prompt", async () => {
    const tui = new ScriptedTui(0, 1);
    expect(await deliver(tui)).toEqual({ taken: true });
    expect(tui.keys).toEqual([`text:${PROMPT}`, "Enter", `text:${PROMPT}`, "Enter"]);
  });

  it("without hooks that report prompts, a prompt not seen is never typed twice: Enter only", async () => {
    const tui = new ScriptedTui(0, 1);
    const outcome = await deliver(tui, false);
    expect(outcome).toMatchObject({ taken: false, why: "not-taken" });
    expect(tui.keys.filter((k) => k.startsWith("text:"))).toHaveLength(1);
  });

  it("on a screen that is not the input screen (a permission prompt) nothing more is pressed", async () => {
    const tui = new ScriptedTui(1);
    const outcome = deliverPrompt(PROMPT, { terminal: tui, classify, retype: true, taken: () => false, checksMs: [50, 50] });
    tui["dialog"] = true;
    expect(await outcome).toMatchObject({ taken: false, why: "not-ready" });
    expect(tui.keys).toEqual([`text:${PROMPT}`, "Enter"]);
  });

  it("a TUI known by its empty input box only (Gemini CLI): the text left in the box is on screen, so Enter sends it", async () => {
    const tui = new ScriptedTui(1);
    const emptyOnly = (s: string): ScreenState => (/❯ \n/.test(s) ? { kind: "ready" } : { kind: "unknown" });
    const outcome = await deliverPrompt(PROMPT, {
      terminal: tui,
      classify: emptyOnly,
      retype: true,
      taken: (at) => tui.takenAt !== undefined && tui.takenAt >= at,
      checksMs: [50, 50],
    });
    expect(outcome).toEqual({ taken: true });
    expect(tui.keys).toEqual([`text:${PROMPT}`, "Enter", "Enter"]);
  });

  it("while a person has the terminal open nothing more is pressed: the input box may hold what they type", async () => {
    const tui = new ScriptedTui(1);
    tui.person = true;
    expect(await deliver(tui)).toMatchObject({ taken: false, why: "attached" });
    expect(tui.keys).toEqual([`text:${PROMPT}`, "Enter"]);
  });

  it("an old dialog in the scrollback does not stop it: what is on screen now is the input screen", async () => {
    const tui = new ScriptedTui(1);
    tui.scrollback = "Bash command\n  ls\nDo you want to proceed?\n❯ 1. Yes\n";
    expect(await deliver(tui)).toEqual({ taken: true });
    expect(tui.keys).toEqual([`text:${PROMPT}`, "Enter", "Enter"]);
  });

  it("text shown only in the scrollback was shown: Enter, never typed twice", async () => {
    const tui = new ScriptedTui(0, 1);
    tui.scrollback = `❯ ${PROMPT}\n`;
    expect(await deliver(tui)).toMatchObject({ taken: false, why: "not-taken" });
    expect(tui.keys.filter((k) => k.startsWith("text:"))).toHaveLength(1);
  });

  it("a prompt never taken ends after the checks, with the last screen to log", async () => {
    const tui = new ScriptedTui(10);
    const outcome = await deliver(tui);
    expect(outcome).toMatchObject({ taken: false, why: "not-taken" });
    expect(outcome.taken === false && outcome.screen).toContain(PROMPT);
    expect(tui.keys.filter((k) => k === "Enter")).toHaveLength(4);
  });
});
