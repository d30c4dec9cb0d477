import { z } from "zod";
import { ALPHABETS, MAX_TOKEN_LENGTH, parseDuration, ValidationError } from "../../schemas/index.js";
import { UsageError } from "./errors.js";

/**
 * Command-line validation with zod. Every flag and argument of a command is parsed by one
 * schema; a failure is a UsageError (exit code 2) that names each bad flag, what it got, and
 * what it accepts.
 */
export function parseInput<T extends z.ZodType>(schema: T, raw: Record<string, unknown>, labels: Record<string, string> = {}): z.infer<T> {
  const r = schema.safeParse(raw);
  if (r.success) return r.data;
  const lines = r.error.issues.map((issue) => {
    const key = String(issue.path[0] ?? "");
    const label = labels[key] ?? (key ? `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}` : "input");
    const got = key in raw && raw[key] !== undefined ? ` (got ${JSON.stringify(raw[key])})` : "";
    return `${label}: ${issue.message}${got}`;
  });
  const names = r.error.issues.some((i) => /must use only/.test(i.message));
  throw new UsageError(`Invalid input: ${lines.join("; ")}.`, {
    remedy: names ? "Names are refused, never rewritten: choose one made of the characters listed." : "See `--help` for what each flag accepts.",
  });
}

/** A name token of an alphabet, with a message that says the alphabet. */
export function token(alphabet: keyof typeof ALPHABETS, what: string) {
  return z
    .string()
    .min(1, `${what} must not be empty`)
    .max(MAX_TOKEN_LENGTH, `${what} must be at most ${MAX_TOKEN_LENGTH} characters`)
    .regex(ALPHABETS[alphabet].re, `${what} must use only ${ALPHABETS[alphabet].text}`);
}

/** A person's or agent's actor name (`--as`, a DM recipient): letters, digits and '_'. */
export const actorName = (what: string) => token("principal", what);

/** A name to act as: an actor name that is not one of Cotal's own (`cotal_…` is reserved). */
export const actingName = (what: string) =>
  actorName(what).refine((n) => !n.startsWith("cotal_"), `${what} must not start with "cotal_" (reserved for Cotal's own services)`);

/** A dotted channel name such as `general` or `team.backend`. */
export const channelName = z
  .string()
  .min(1, "channel must not be empty")
  .max(255, "channel must be at most 255 characters")
  .regex(/^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64})*$/, `channel must be dot-separated segments of ${ALPHABETS.name.text}`);

/**
 * A duration flag (`30s`, `15m`, `1h`, `7d`) parsed into milliseconds. A unit is required on
 * every flag: a bare `5` would be read as milliseconds by parseDuration, which nobody means.
 */
export const duration = z.string().transform((text, ctx) => {
  if (/^\s*\d+(\.\d+)?\s*$/.test(text)) {
    ctx.addIssue({ code: "custom", message: `a bare number has no unit; write it with one, such as ${text.trim()}s, ${text.trim()}m or ${text.trim()}h` });
    return z.NEVER;
  }
  try {
    return parseDuration(text);
  } catch (err) {
    ctx.addIssue({ code: "custom", message: err instanceof ValidationError ? "use a number and a unit such as 30s, 15m, 1h, 24h or 7d" : String(err) });
    return z.NEVER;
  }
});

/** A positive integer flag given as text. */
/** A size in bytes: a whole number with an optional unit (KB, MB, GB: powers of 1000; KiB, MiB, GiB: of 1024). */
export const byteSize = (what: string) =>
  z.string().transform((text, ctx) => {
    const m = /^(\d+)\s*(B|KB|KiB|MB|MiB|GB|GiB|TB|TiB)?$/i.exec(text.trim());
    const units: Record<string, number> = { b: 1, kb: 1e3, kib: 1024, mb: 1e6, mib: 1024 ** 2, gb: 1e9, gib: 1024 ** 3, tb: 1e12, tib: 1024 ** 4 };
    const bytes = m ? Number(m[1]) * units[(m[2] ?? "b").toLowerCase()]! : NaN;
    if (!Number.isSafeInteger(bytes) || bytes <= 0) {
      ctx.addIssue({ code: "custom", message: `${what} must be a size such as 512MiB, 2GiB or 1000000 (bytes), not ${JSON.stringify(text)}` });
      return z.NEVER;
    }
    return bytes;
  });

export const positiveInt = (what: string) =>
  z
    .string()
    .regex(/^\d+$/, `${what} must be a whole number`)
    .transform(Number)
    .pipe(z.number().int().min(1, `${what} must be at least 1`));

/** A TCP port given as text. */
export const port = z
  .string()
  .regex(/^\d+$/, "port must be a whole number from 1 to 65535")
  .transform(Number)
  .pipe(z.number().int().min(1, "port must be from 1 to 65535").max(65535, "port must be from 1 to 65535"));

/** A host name or IP address to listen on. */
export const host = z
  .string()
  .min(1, "host must not be empty")
  .regex(/^[A-Za-z0-9.:_-]+$/, "host must be a host name or an IP address such as 127.0.0.1");

/** Commander's parser for a repeatable option (`--channel a --channel b`): every value, in order. */
export const repeatable = (value: string, previous: string[] = []): string[] => [...previous, value];
