/** The variable that says what Cotal's pi extension is loaded for: `run` (the posture only); else a seat or a hand-started session. */
export const MODE_ENV = "COTAL_PI_MODE";

/** What Cotal's pi extension relays, as the connector's hook events: pi's event → hook. */
export const EXTENSION_HOOKS: ReadonlyArray<{ pi: string; hook: string }> = [
  { pi: "before_agent_start (a session's first prompt)", hook: "SessionStart" },
  { pi: "before_agent_start", hook: "UserPromptSubmit" },
  { pi: "tool_call", hook: "PreToolUse" },
  { pi: "agent_end (the turn ended in an error)", hook: "StopFailure" },
  { pi: "agent_end", hook: "Stop" },
  { pi: "session_shutdown", hook: "SessionEnd" },
];
