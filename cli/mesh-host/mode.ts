import { z } from "zod";

/**
 * The security mode of a mesh (docs/security.md): `static` (operator-mode JWT auth) by default,
 * `open` with --open. This file is the one place that decides.
 */
export const MeshMode = z.enum(["open", "static"]);
export type MeshMode = z.infer<typeof MeshMode>;

/** The mode `cotal up` will start, and what the user should be told about it. */
export interface ModeChoice {
  mode: MeshMode;
  warnings: string[];
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1)$/;

/** Decide the mode from `up`'s flags. */
export function chooseMode(flags: { open?: boolean | undefined; host: string }): ModeChoice {
  const warnings: string[] = [];
  const mode: MeshMode = flags.open ? "open" : "static";
  if (mode === "open" && !LOOPBACK.test(flags.host)) {
    warnings.push(
      `open mode has no authentication, and --host ${flags.host} is not a loopback address: anyone who can reach it can read and write every message.`,
    );
  }
  return { mode, warnings };
}
