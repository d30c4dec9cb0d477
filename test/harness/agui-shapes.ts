// The AG-UI event types one scripted agent turn produces on the event plane, whatever the runtime:
// the prompt, a text, one tool call (by name only), a closing text. Shared by the runtimes' tests
// so each is held to the same shape.
const TEXT = ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"] as const;

/** RUN_STARTED, the prompt and a text, one tool call, a text, RUN_FINISHED. */
export const ONE_TOOL_TURN = ["RUN_STARTED", ...TEXT, ...TEXT, "TOOL_CALL_START", "TOOL_CALL_END", ...TEXT, "RUN_FINISHED"] as const;
