// `cotal doctor`: the Claude Code plugin (what `cotal setup` installs, and `cotal setup --check`
// compares): in place and of this version, so hand-started Claude sessions join the mesh.
import { COTAL_VERSION } from "../../schemas/index.js";
import { inspectSetup, type SetupInspection } from "../install/setup-files.js";
import { failed, failedWith, pass, skipped, warned, type DoctorCheck } from "./check.js";

const ID = "plugin";
const TITLE = "Claude plugin";
const FIX = "Run `cotal setup` (it installs the plugin, or refreshes what an upgrade made stale).";

/**
 * Skipped without a claude CLI (the plugin is installed into Claude Code). Not installed at all:
 * a warning (managed seats load the package's own plugin; only hand-started sessions need it).
 * Installed but stale, of another version, pointing elsewhere or disabled: a failure.
 */
export async function pluginCheck(projectDir: string): Promise<DoctorCheck> {
  let found: SetupInspection;
  try {
    found = await inspectSetup({ scope: "user", projectDir });
    // Installed for this project only: that install is the one to judge.
    if (found.state?.plugin === "absent") {
      const project = await inspectSetup({ scope: "project", projectDir });
      if (project.state?.plugin !== "absent") found = project;
    }
  } catch (err) {
    return failedWith(ID, TITLE, err, FIX);
  }
  const { market, states, cli, state, problems } = found;
  const stale = states.filter((s) => s.state !== "ok").length;
  if (!cli.path || !state)
    return skipped(
      ID,
      TITLE,
      `no claude CLI here (${cli.notes.length ? cli.notes.join(" ") : "not on PATH, and COTAL_CLAUDE_BIN is not set"}), so Claude's record of the plugin cannot be read; the marketplace at ${market} has ${stale === 0 ? "every file up to date" : `${stale} of ${states.length} files missing or stale`}.`,
    );
  if (problems.length === 0) return pass(ID, TITLE, `cotal ${COTAL_VERSION} installed and enabled (${cli.path}); marketplace ${market} up to date.`);
  const nothing = state.plugin === "absent" && (state.marketplace === "absent" || states.every((s) => s.state === "missing"));
  if (nothing)
    return warned(
      ID,
      TITLE,
      `not installed in Claude Code (${cli.path}): Claude sessions started by hand do not join the mesh (seats a manager starts load the package's plugin themselves).`,
      FIX,
    );
  return failed(ID, TITLE, `${problems.join("; ")}.`, FIX);
}
