/**
 * A seat's terminal as the manager uses it, whichever runtime holds it (tmux window or pty): read
 * the screen, type into it, tell whether a person has it open, and how a person opens it.
 */
export interface SeatTerminal {
  /** The visible screen (plus `history` lines of scrollback where the runtime keeps lines). */
  screen(history?: number): Promise<string>;
  /** Type `text`, then Enter. */
  type(text: string): Promise<void>;
  /** Whether a person has the terminal open (then the manager types nothing into it). */
  attached(): Promise<boolean>;
  /**
   * How a person opens it on the manager's host: a command line (tmux), or `["pty", <socket>]`
   * for a pty seat, which `cotal attach` relays itself.
   */
  attachCommand(): string[];
  /** Release what the runtime keeps once the process is gone (a kept tmux window). */
  close(): Promise<void>;
}
