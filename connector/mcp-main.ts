// Entry of the bundled MCP stdio server (dist/connector.mjs), launched by Claude. Exits once it
// has left the mesh (stdin closed, SIGTERM/SIGINT/SIGHUP), or at once when it refuses to start.
import { runConnector } from "./run.js";

const code = await runConnector(process.env);
// Everything is closed; do not wait on a straggling handle (stdin, a reconnect timer).
process.exit(code);
