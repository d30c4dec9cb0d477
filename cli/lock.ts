import { closeSync, openSync, statSync, writeSync } from "node:fs";
import { CommandFailedError } from "./errors.js";
import { isRunning, readRecord, recordOf, removeRecord } from "./pid-file.js";

/**
 * A lock file so two `cotal up` / `cotal down` runs in one mesh root never race (two servers,
 * or a stop during a start). The file records the holder's pid and start time; a lock whose
 * holder is gone is taken over.
 */
export function acquireLock(file: string, what: string): () => void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, "wx");
      writeSync(fd, JSON.stringify(recordOf(process.pid, process.argv)) + "\n");
      closeSync(fd);
      return () => removeRecord(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const holder = readRecord(file);
      const fresh = !holder && Date.now() - mtime(file) < 5_000; // being written right now
      if ((holder && isRunning(holder)) || fresh) {
        throw new CommandFailedError(`Another cotal command (pid ${holder?.pid ?? "unknown"}) is ${what} this mesh right now.`, {
          remedy: "Wait for it to finish, then run the command again.",
        });
      }
      removeRecord(file); // its holder is gone
    }
  }
  throw new CommandFailedError(`Could not take the lock ${file}.`, { remedy: "Remove it if no other cotal command is running." });
}

function mtime(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}
