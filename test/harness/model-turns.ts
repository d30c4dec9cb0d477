// What a runtime's model was handed, read the same way whatever wire API its CLI speaks: the shared
// seat cases (seat-cases.ts) wait on and check a model's turns through this view, so a runtime
// with a double of a new API needs only a view of its own here.
import { allText, lastUserText, toolResults, type ModelDouble, type RecordedRequest } from "../../testbed/model-double.js";
import { contentTexts, functionResponses, type GeminiDouble, type RecordedGeminiRequest } from "../../testbed/gemini-double.js";

/** A tool's result as the model got it back. */
export interface ToolAnswer {
  name: string | undefined;
  /** Marked an error (or, where the API marks nothing, saying "error"). */
  isError: boolean;
  /** The result as text, for assertions and their messages. */
  text: string;
}

/** A model double's turns, seen the same way for every API. */
export interface ModelTurns<R> {
  /** The main agent's model turns so far, oldest first. */
  all(): readonly R[];
  /** Everything the model was shown in a turn, as text. */
  text(r: R): string;
  /** The last user message of a turn (the prompt it answers, and what a hook added to it). */
  lastUser(r: R): string;
  /** The tool results handed back in a turn. */
  results(r: R): ToolAnswer[];
  /** One line per request the double got, for a timeout's message. */
  log(): string[];
}

/** The turns of an Anthropic Messages double (Claude Code, OpenCode, Kilo Code, pi, Copilot). */
export function messagesTurns(model: ModelDouble): ModelTurns<RecordedRequest> {
  return {
    all: () => model.mainRequests,
    text: allText,
    lastUser: lastUserText,
    results: toolResults,
    log: () => model.requests.filter((r) => r.path === "/v1/messages").map((r) => `${r.kind}: ${lastUserText(r).slice(0, 300)}`),
  };
}

/** The last user turn's text of a Gemini request (the prompt, and what a hook added to it). */
export function geminiLastUserText(r: RecordedGeminiRequest): string {
  const users = (r.body?.contents ?? []).filter((c) => c.role === "user" && (c.parts ?? []).some((p) => p.text !== undefined));
  return (users.at(-1)?.parts ?? []).map((p) => p.text ?? "").join("\n");
}

/** The turns of a Gemini API double (Gemini CLI): a function response is an error when it says so. */
export function geminiTurns(double: GeminiDouble): ModelTurns<RecordedGeminiRequest> {
  return {
    all: () => double.turns(),
    text: (r) => contentTexts(r).join("\n"),
    lastUser: geminiLastUserText,
    results: (r) =>
      functionResponses(r).map((f) => {
        const text = JSON.stringify(f.response ?? null);
        return { name: f.name, isError: /error/i.test(text), text };
      }),
    log: () => double.turns().map((r) => `${r.step ?? "-"}: ${geminiLastUserText(r).slice(0, 300)}`),
  };
}
