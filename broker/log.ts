import { pino, type Logger } from "pino";
import { neutralizeLogLine } from "../schemas/index.js";

/**
 * One root logger per process, to stderr (stdout belongs to MCP stdio and hook replies).
 * Components take a child with bindings instead of string prefixes. Secrets are redacted by path.
 */
let root: Logger | undefined;
let destination: pino.DestinationStream | undefined;

/**
 * Send logs somewhere other than stderr (tests parse them as objects). Affects loggers
 * created afterwards.
 */
export function setLogDestination(dest: pino.DestinationStream | undefined): void {
  destination = dest;
  root = undefined;
}

export function rootLogger(): Logger {
  root ??= pino(
    {
      level: process.env.COTAL_LOG_LEVEL ?? "info",
      base: { pid: process.pid },
      redact: { paths: ["*.creds", "*.seed", "*.token", "*.jwt", "*.password", "creds", "seed", "token", "jwt"], censor: "[redacted]" },
    },
    neutralizing(destination ?? pino.destination({ fd: 2, sync: true })),
  );
  return root;
}

/**
 * The log boundary: every line passes neutralizeLogLine on its way out. Log lines quote what
 * peers wrote (presence keys and records, subjects, card names, error text); escaping each line
 * once here covers every field and every logger, instead of each call site.
 */
function neutralizing(dest: pino.DestinationStream): pino.DestinationStream {
  return { write: (line: string) => dest.write(neutralizeLogLine(line)) };
}

/** A child logger for one component, carrying its bindings (space, seat, stream…). */
export function logger(component: string, bindings: Record<string, unknown> = {}): Logger {
  return rootLogger().child({ component, ...bindings });
}

export type { Logger };
