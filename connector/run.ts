import { pino } from "pino";
import { logger, setLogDestination } from "../broker/index.js";
import { CotalError } from "../schemas/index.js";
import { optionsFromEnv } from "./config.js";
import { Connector } from "./connector.js";
import { CustodyHeldError, CONNECTOR_EXIT, LaunchError, UnsafeControlDirError } from "./errors.js";
import { resolveLaunch } from "./launch.js";
import { McpStdioTransport } from "./mcp-stdio.js";
import { buildNotJoinedServer } from "./tools.js";

/**
 * The connector process: resolve the launch, claim custody, join, serve MCP on stdio, and leave
 * (offline presence) once when stdin closes or a termination signal arrives. Resolves with the
 * process exit code.
 */
export async function runConnector(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (env.COTAL_LOG_FILE) setLogDestination(pino.destination({ dest: env.COTAL_LOG_FILE, sync: true, mkdir: true }));
  const log = logger("connector-main");
  const stdinClosed = new Promise<string>((resolve) => {
    process.stdin.once("end", () => resolve("stdin closed"));
    process.stdin.once("close", () => resolve("stdin closed"));
  });
  const signalled = new Promise<string>((resolve) => {
    for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.once(sig, () => resolve(sig));
  });
  const ended = Promise.race([stdinClosed, signalled]);

  let resolution;
  try {
    resolution = resolveLaunch(env);
  } catch (err) {
    return refuse(err, CONNECTOR_EXIT.launch);
  }

  if (resolution.kind === "none") {
    const server = buildNotJoinedServer(resolution.note);
    const transport = new McpStdioTransport();
    transport.servesTool = (name) => server.toolNames.has(name);
    await server.connect(transport);
    log.info("not joined: serving cotal_join_help only");
    await ended;
    await server.close().catch(() => undefined);
    return CONNECTOR_EXIT.ok;
  }

  let connector: Connector;
  try {
    connector = await Connector.start({ ...optionsFromEnv(env), launch: resolution.launch });
  } catch (err) {
    if (err instanceof CustodyHeldError) return refuse(err, CONNECTOR_EXIT.custody);
    if (err instanceof LaunchError || err instanceof UnsafeControlDirError) return refuse(err, CONNECTOR_EXIT.launch);
    return refuse(err, CONNECTOR_EXIT.mesh);
  }
  const transport = new McpStdioTransport();
  const server = await connector.serve(transport);
  transport.servesTool = (name) => server.toolNames.has(name);
  const transportClosed = new Promise<string>((resolve) => {
    const prev = server.server.onclose;
    server.server.onclose = () => {
      prev?.();
      resolve("MCP transport closed");
    };
  });
  const reason = await Promise.race([ended, transportClosed]);
  await connector.close(reason);
  return CONNECTOR_EXIT.ok;

  function refuse(err: unknown, code: number): number {
    const message = err instanceof CotalError || err instanceof Error ? err.message : String(err);
    log.error({ err, code }, "connector refused to start");
    process.stderr.write(`cotal connector: ${message}\n`);
    return code;
  }
}
