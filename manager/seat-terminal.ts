/**
 * A seat's terminal as the manager uses it, whichever terminal host holds it (tmux window or pty): read
 * the screen, type into it, and tell whether a person has it open (how a person opens it is built
 * where they are: attach.ts).
 */
export interface SeatTerminal {
  /** The visible screen (plus `history` lines of scrollback where the terminal host keeps lines). */
  screen(history?: number): Promise<string>;
  /** Type `text`, then Enter, `submitDelayMs` later (a TUI that reads fast input as a paste takes a quick Enter as a newline). */
  type(text: string, submitDelayMs?: number): Promise<void>;
  /** Press Enter alone (text typed earlier that a TUI kept in its input box is sent). */
  submit(): Promise<void>;
  /** Whether a person has the terminal open (then the manager types nothing into it). */
  attached(): Promise<boolean>;
  /** Release what the terminal host keeps once the process is gone (a kept tmux window). */
  close(): Promise<void>;
}
