// Moved to testbed/ (shared with the benches, which must not bundle test code); tests keep this path.
export * from "../../testbed/ports.js";
