import { join } from "node:path";
import { assertToken, PrincipalToken, type TerminalHost } from "../schemas/index.js";
import { seatDir } from "./seat-launcher.js";
import { TmuxServer } from "./tmux-host.js";

/** The socket of a manager's own tmux server, in its state dir (nothing mixes with the user's tmux). */
export function tmuxSocketPath(stateDir: string): string {
  return join(stateDir, "tmux.sock");
}

/** The tmux session of a space's seats: one window per seat. */
export function tmuxSessionName(space: string): string {
  return `cotal-${assertToken("space", "space", space)}`;
}

/** The unix socket `cotal attach` relays a pty seat's terminal over, in the seat's own folder. */
export function ptySocketPath(seatFolder: string): string {
  return join(seatFolder, "pty.sock");
}

/** The terminal hosts whose seats have a terminal a person can open. */
export type AttachableTerminalHost = Exclude<TerminalHost, "process">;

/**
 * How a person opens a seat's terminal on its manager's host, built only from what this host
 * knows: the manager's state dir, the space and the seat's name (a principal token, so it can
 * name no other path or window). Nothing a manager answers over the mesh is run (another
 * manager's credential could answer with any command): `["pty", <socket>]` for a pty seat
 * (`cotal attach` relays it), else tmux's own attach.
 */
export function localAttachCommand(stateDir: string, space: string, name: string, terminal: AttachableTerminalHost): string[] {
  const seat = PrincipalToken.parse(name);
  if (terminal === "pty") return ["pty", ptySocketPath(seatDir(stateDir, seat))];
  return new TmuxServer(tmuxSocketPath(stateDir), tmuxSessionName(space)).attachCommand(seat);
}

/**
 * What `cotal attach` would show of a tmux seat of this host's manager, read-only: its visible
 * screen (tmux capture-pane), never a keystroke. Built from this host's state as localAttachCommand
 * is; "" when the window is gone.
 */
export function seatScreen(stateDir: string, space: string, name: string): Promise<string> {
  return new TmuxServer(tmuxSocketPath(stateDir), tmuxSessionName(space)).screen(PrincipalToken.parse(name));
}
