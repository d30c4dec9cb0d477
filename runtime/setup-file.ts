// `cotal setup --runtime <r>` writes Cotal's entries into a user's own config file: what each
// file's fate is (compared only with `--check`), and writing it, the same for every runtime.
import { mkdirSync, writeFileSync } from "node:fs";
import type { RuntimeSetupReport } from "./adapter.js";

export type SetupAction = RuntimeSetupReport["files"][number]["action"];

/** What setup does (or, checking, would find) for a file that holds `now` and should hold `want`. */
export function setupAction(now: string | undefined, want: string, check: boolean): SetupAction {
  if (now === undefined) return check ? "missing" : "created";
  if (now === want) return "ok";
  return check ? "stale" : "updated";
}

/** Write `want` (0600, its folder 0700) unless only checking or it is already in place. */
export function applySetupFile(dir: string, file: string, want: string, action: SetupAction, check: boolean): void {
  if (check || action === "ok") return;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(file, want, { mode: 0o600 });
}
