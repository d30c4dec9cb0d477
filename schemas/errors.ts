/**
 * The base of every Cotal error: a stable `code` callers can switch on, a message that says
 * what was wrong, a `remedy` that says how to fix it, and the underlying `cause` when there is one.
 */
export class CotalError extends Error {
  /** Stable, machine-readable code (kebab-case), e.g. `invalid-token`. */
  readonly code: string;
  /** One sentence telling the user (or model) what to do about it. */
  readonly remedy: string | undefined;

  constructor(code: string, message: string, options: { remedy?: string; cause?: unknown } = {}) {
    super(options.remedy ? `${message} ${options.remedy}` : message, { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.remedy = options.remedy;
  }
}

/** A name that cannot be a NATS subject token. Names are refused, never rewritten. */
export class InvalidTokenError extends CotalError {
  constructor(
    readonly what: string,
    readonly token: string,
    readonly alphabet: string,
  ) {
    super("invalid-token", `Invalid ${what} ${JSON.stringify(token)}: it must be non-empty and use only ${alphabet}.`, {
      remedy: `Choose a ${what} made of ${alphabet}; names are refused, never rewritten.`,
    });
  }
}

/** A message or argument that does not match its schema. */
export class ValidationError extends CotalError {
  constructor(
    readonly what: string,
    readonly issues: string[],
    options: { cause?: unknown } = {},
  ) {
    super("invalid-input", `Invalid ${what}: ${issues.join("; ")}.`, options);
  }
}

/** A payload over the size limit. */
export class PayloadTooLargeError extends CotalError {
  constructor(
    readonly size: number,
    readonly limit: number,
  ) {
    super("payload-too-large", `Message is ${size} bytes, over the limit of ${limit} bytes.`, {
      remedy: "Send less text, split it into several messages, or attach large content as an artifact.",
    });
  }
}

/**
 * The one error an adapter throws for a launch it cannot build as asked (a relative path, a launch
 * option or allow rule Cotal does not pass, a persona file that cannot be written…): its code names
 * the runtime (`bad-<runtime>-launch`), so a refusal on the wire says whose launch it was.
 */
export class RuntimeLaunchError extends CotalError {
  constructor(
    /** The runtime whose launch was refused (its registry name). */
    readonly runtime: string,
    message: string,
    options: { remedy?: string; cause?: unknown } = {},
  ) {
    super(`bad-${runtime}-launch`, message, options);
  }
}

/** An adapter's maker of its launch errors: `launchErrorOf(name)("…")`. */
export const launchErrorOf =
  (runtime: string) =>
  (message: string, options: { remedy?: string; cause?: unknown } = {}): RuntimeLaunchError =>
    new RuntimeLaunchError(runtime, message, options);
