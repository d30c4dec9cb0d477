import { accessSync, constants, statSync } from "node:fs";
import { delimiter, join } from "node:path";
import { CotalError } from "../schemas/index.js";

/** Folders searched after PATH: distribution packages install nats-server into an sbin. */
export const EXTRA_BIN_DIRS: readonly string[] = ["/usr/sbin", "/usr/local/sbin"];

/** No nats-server binary was found; the message says how to install one or point at it. */
export class NatsServerNotFoundError extends CotalError {
  constructor(
    detail: string,
    /** Paths that were tried, in order. */
    readonly searched: readonly string[],
  ) {
    super("nats-server-missing", `${detail}.`, {
      remedy:
        "Install it (Debian/Ubuntu: `apt-get install nats-server`; others: https://github.com/nats-io/nats-server/releases), " +
        "or set NATS_SERVER_BIN to the path of a nats-server binary.",
    });
  }
}

/** Find nats-server: NATS_SERVER_BIN (must exist), else PATH, then /usr/sbin and /usr/local/sbin. */
export function findNatsServer(env: NodeJS.ProcessEnv = process.env, extraDirs: readonly string[] = EXTRA_BIN_DIRS): string {
  const fromEnv = env.NATS_SERVER_BIN;
  if (fromEnv) {
    if (isExecutable(fromEnv)) return fromEnv;
    throw new NatsServerNotFoundError(`NATS_SERVER_BIN=${fromEnv} is not an executable file`, [fromEnv]);
  }
  const dirs = [...new Set([...(env.PATH ?? "").split(delimiter).filter(Boolean), ...extraDirs])];
  const searched = dirs.map((d) => join(d, "nats-server"));
  const found = searched.find(isExecutable);
  if (found) return found;
  throw new NatsServerNotFoundError(`nats-server was not found in PATH or in ${extraDirs.join(", ")}`, searched);
}

function isExecutable(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
