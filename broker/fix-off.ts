// Fixes the fault suite switches off to show that its checker catches what each one prevents
// (docs/reliability.md, "Showing the checker can fail"). Test-only: the switch is an environment
// variable the lab sets on the processes it runs; nothing else sets it, and a process that reads
// it set says so once, loudly.
import { z } from "zod";
import { CotalError } from "../schemas/index.js";
import type { Logger } from "./log.js";

/** The variable that names the fixes switched off, comma-separated. */
export const FIX_OFF_ENV = "COTAL_FIX_OFF";

/** The product's fixes a test may switch off, and what each guards. */
export const SWITCHABLE_FIXES = {
  adoption: "a restarted manager adopts its seats that still run; off: it takes each for dead and starts it again beside the old process",
  restart: "a seat that exits after it joined is started again by its manager (its restart policy); off: it is retired at its first exit",
} as const;
export const SwitchableFix = z.enum(Object.keys(SWITCHABLE_FIXES) as [keyof typeof SWITCHABLE_FIXES, ...(keyof typeof SWITCHABLE_FIXES)[]]);
export type SwitchableFix = z.infer<typeof SwitchableFix>;

/** An unknown fix name in COTAL_FIX_OFF: refused rather than ignored, so a typo cannot pass for a fix switched off. */
export class UnknownFixError extends CotalError {
  constructor(readonly value: string) {
    super("unknown-fix", `${FIX_OFF_ENV}=${value} names no fix that can be switched off (known: ${Object.keys(SWITCHABLE_FIXES).join(", ")}).`, {
      remedy: `Unset ${FIX_OFF_ENV} (it is for the fault suite only), or name known fixes.`,
    });
  }
}

/** The fixes `env` switches off (none when the variable is unset or empty). */
export function fixesOff(env: NodeJS.ProcessEnv = process.env): ReadonlySet<SwitchableFix> {
  const raw = env[FIX_OFF_ENV]?.trim();
  if (!raw) return new Set();
  const names = raw.split(",").map((s) => s.trim());
  const parsed = z.array(SwitchableFix).safeParse(names);
  if (!parsed.success) throw new UnknownFixError(raw);
  return new Set(parsed.data);
}

const warned = new Set<string>();

/** Whether `fix` is switched off here; the first time one is, `log` says so at error level (never silent). */
export function fixOff(fix: SwitchableFix, log: Logger, env: NodeJS.ProcessEnv = process.env): boolean {
  const off = fixesOff(env).has(fix);
  if (off && !warned.has(fix)) {
    warned.add(fix);
    log.error({ fix, guards: SWITCHABLE_FIXES[fix] }, `a fix is switched off (${FIX_OFF_ENV}): for the fault suite only, never in use`);
  }
  return off;
}
