/** What Cotal's plugin for the OpenCode family (plugin.ts) relays, as the connector's hook events: the CLI's hook or event → hook. */
export const PLUGIN_HOOKS: ReadonlyArray<{ opencode: string; hook: string }> = [
  { opencode: "chat.message (a session's first prompt)", hook: "SessionStart" },
  { opencode: "chat.message", hook: "UserPromptSubmit" },
  { opencode: "tool.execute.before", hook: "PreToolUse" },
  { opencode: "permission.asked", hook: "Notification" },
  { opencode: "session.error", hook: "StopFailure" },
  { opencode: "session.idle", hook: "Stop" },
];
