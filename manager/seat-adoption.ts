// Adoption on a manager's start (docs/manager.md, Seat log): a recorded running seat's process is
// taken over only when it proves to be this manager's own incarnation of that seat. Pid and start
// time alone name a process, not whose seat it is: beside another mesh on the same host (a restored
// backup's original, a copied project folder) a record can name that mesh's running seat.
import { existsSync, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { processStartTime } from "../runtime/index.js";
import { readLaunchMaterial } from "./launch-material-file.js";
import type { SeatFiles } from "./seat-launcher.js";

/** The variable a seat process finds its launch material in (seat-launcher.ts launchSeat). */
const LAUNCH_MATERIAL_ENV = "COTAL_LAUNCH_MATERIAL";

/** What a recorded seat's process turned out to be, on the manager's start. */
export type SeatProof =
  | { kind: "ours" }
  /** Not adopted: `why` says so for the seat log; `running` when the recorded process still runs (someone else's). */
  | { kind: "not-ours"; why: string; running: boolean };

/** The recorded incarnation: its uid, terminal host and the process its `launched` named. */
export interface RecordedSeat {
  uid: string;
  terminal?: string | undefined;
  pid?: number | undefined;
  startTime?: string | undefined;
}

/**
 * Prove that the process a seat record names is this manager's incarnation of that seat: the same
 * process (pid and start time), launched from this manager's seat folder (a `process` seat's
 * COTAL_LAUNCH_MATERIAL is that folder's launch material; a `tmux` seat is the seat's window on the
 * manager's own tmux server, whose socket is in its state dir), and the launch material there is the
 * recorded incarnation's (its lifecycle uid). `panePid` reads the seat's window on that tmux server.
 */
export async function proveSeatProcess(r: RecordedSeat, files: SeatFiles, panePid: () => Promise<number | undefined>): Promise<SeatProof> {
  if (r.terminal === "pty") return { kind: "not-ours", why: "a pty seat lives with the manager that held it: it is never adopted", running: false };
  if (r.pid === undefined || !r.startTime) return { kind: "not-ours", why: "no process was recorded for it", running: false };
  if (processStartTime(r.pid) !== r.startTime) return { kind: "not-ours", why: "the process was gone when the manager restarted", running: false };
  const notOurs = (what: string): SeatProof => ({
    kind: "not-ours",
    why: `pid ${r.pid} still runs, but ${what}: it was not adopted (it may be another mesh's seat on this host)`,
    running: true,
  });
  if (r.terminal === "tmux") {
    if ((await panePid()) !== r.pid) return notOurs("it is not the seat's window on this manager's tmux server");
  } else {
    const material = processEnv(r.pid, LAUNCH_MATERIAL_ENV);
    if (material === undefined) return notOurs(`its environment names no ${LAUNCH_MATERIAL_ENV} this manager can read`);
    if (!samePath(material, files.material)) return notOurs(`its launch material is ${material}, not this manager's ${files.material}`);
  }
  let uid: string | undefined;
  try {
    uid = readLaunchMaterial(files.material).uid;
  } catch (err) {
    return notOurs(`the seat's launch material is unusable (${(err as Error).message})`);
  }
  if (uid !== r.uid) return notOurs(`the seat's launch material is of incarnation ${uid ?? "(none)"}, not the recorded ${r.uid}`);
  return { kind: "ours" };
}

/** Why a seat cannot be started again from its folder (the folder or its launch material is missing); undefined when it can. */
export function seatFolderProblem(files: SeatFiles): string | undefined {
  if (!statSync(files.dir, { throwIfNoEntry: false })?.isDirectory()) return `its folder ${files.dir} is missing`;
  if (!existsSync(files.material)) return `its launch material ${files.material} is missing`;
  return undefined;
}

/** One variable of a running process's environment (Linux /proc/<pid>/environ); undefined when unreadable or unset. */
export function processEnv(pid: number, name: string): string | undefined {
  let raw: string;
  try {
    raw = readFileSync(`/proc/${pid}/environ`, "utf8");
  } catch {
    return undefined;
  }
  const prefix = `${name}=`;
  return raw
    .split("\0")
    .find((kv) => kv.startsWith(prefix))
    ?.slice(prefix.length);
}

/** The same file: the same absolute path, or (both present) the same inode. */
function samePath(a: string, b: string): boolean {
  if (resolve(a) === resolve(b)) return true;
  const sa = statSync(a, { throwIfNoEntry: false });
  const sb = statSync(b, { throwIfNoEntry: false });
  return !!sa && !!sb && sa.dev === sb.dev && sa.ino === sb.ino;
}
