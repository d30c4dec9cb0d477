// The manager's terminal wake shows in presence: the hook relays only whether a prompt is the
// manager's wake prompt (never the prompt), and the turn it starts reads "woken by the manager".
import { describe, expect, it } from "vitest";
import { MANAGER_WAKE_PROMPT, presenceFromHook, trimPayload, WOKEN_ACTIVITY } from "../../connector/internal.js";
import { WAKE_PROMPT } from "../../manager/index.js";

describe("the wake prompt", () => {
  it("is the same text in the manager that types it and the hook that recognises it", () => {
    expect(MANAGER_WAKE_PROMPT).toBe(WAKE_PROMPT);
  });

  it("leaves the hook as a yes/no, never as the prompt", () => {
    const woken = trimPayload({ hook_event_name: "UserPromptSubmit", prompt: `${WAKE_PROMPT}\n` });
    expect(woken).toEqual({ hook_event_name: "UserPromptSubmit", manager_wake: true });
    const typed = trimPayload({ hook_event_name: "UserPromptSubmit", prompt: "delete the secrets file" });
    expect(typed).toEqual({ hook_event_name: "UserPromptSubmit", manager_wake: false });
    expect(JSON.stringify(typed)).not.toContain("secrets");
  });

  it("makes the turn's activity say the manager woke it, until the first tool call", () => {
    const s = { turnOpen: false, status: "idle" as const };
    expect(presenceFromHook("UserPromptSubmit", { hook_event_name: "UserPromptSubmit", manager_wake: true }, s).patch).toMatchObject({
      status: "working",
      activity: WOKEN_ACTIVITY,
    });
    expect(presenceFromHook("UserPromptSubmit", { hook_event_name: "UserPromptSubmit", manager_wake: false }, s).patch).toMatchObject({
      status: "working",
      activity: null,
    });
    expect(presenceFromHook("PreToolUse", { hook_event_name: "PreToolUse", tool_name: "Read" }, { turnOpen: true, status: "working" }).patch).toMatchObject({
      activity: "Read",
    });
  });
});
