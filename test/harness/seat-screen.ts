// A managed tmux seat's screen as a person attached to it would see it: the socket and target are
// the ones `cotal attach` opens (built here, as it does), read with capture-pane.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { localAttachCommand } from "../../manager/index.js";

/** The last `lines` lines of seat `name`'s screen in the mesh of `project` (space `space`); "" when it cannot be read. */
export function seatScreen(project: string, space: string, name: string, lines = 200): Promise<string> {
  const [, , sock, , , target] = localAttachCommand(join(project, ".cotal", "manager"), space, name, "tmux");
  return new Promise((resolve) => {
    const p = spawn("tmux", ["-S", sock!, "capture-pane", "-p", "-t", target!, "-S", `-${lines}`], { stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    p.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
    p.once("error", () => resolve(""));
    p.once("close", () => resolve(out));
  });
}
