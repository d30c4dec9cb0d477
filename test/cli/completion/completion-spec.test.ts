// What tab completion reads from a commander definition (cli/completion/spec.ts): commands,
// flags, valued flags by kind, arguments, hidden commands left out, and a name rule that matches
// nothing refused.
import { Argument, Command, Option } from "commander";
import { describe, expect, it } from "vitest";
import { completionSpec, encodeKind, StaleCompletionRuleError } from "../../../cli/completion/spec.js";

function program(): Command {
  const p = new Command("cotal").version("1.0.0").option("--log-format <format>", "text or json").option("--debug");
  p.command("history").argument("<channel>").option("--limit <n>").option("--out <file>").option("--store-dir <dir>");
  const send = p.command("send");
  send
    .command("msg")
    .argument("<channel>")
    .argument("<text...>")
    .addOption(new Option("--class <class>").choices(["live", "log"]));
  p.command("completion").addArgument(new Argument("<shell>").choices(["bash", "zsh"]));
  p.command("__complete", { hidden: true }).argument("<source>");
  return p;
}

describe("completionSpec", () => {
  it("lists every visible command with its flags, valued flags by kind and arguments; the root's options reach every command but --version", () => {
    const nodes = completionSpec(program(), [{ argument: "channel", source: "channels" }]);
    expect(nodes.map((n) => n.path.join(" "))).toEqual(["", "history", "send", "send msg", "completion"]);
    const [root, history, , msg, completion] = nodes;
    expect(root!.subcommands).toEqual(["history", "send", "completion"]);
    expect(root!.flags).toEqual(["-V", "--version", "--log-format", "--debug", "-h", "--help"]);
    expect(history!.flags).toEqual(["--limit", "--out", "--store-dir", "-h", "--help", "--log-format", "--debug"]);
    expect(history!.valued.map((v) => `${v.flag}=${encodeKind(v.value)}`)).toEqual(["--limit=text", "--out=file", "--store-dir=dir", "--log-format=text"]);
    expect(history!.args.map(encodeKind)).toEqual(["names:channels"]);
    expect(msg!.args.map(encodeKind)).toEqual(["names:channels", "text"]);
    expect(msg!.variadic).toBe(true);
    expect(msg!.valued.find((v) => v.flag === "--class")?.value).toEqual({ kind: "choices", values: ["live", "log"] });
    expect(completion!.args).toEqual([{ kind: "choices", values: ["bash", "zsh"] }]);
  });

  it("a name rule that matches no command, option or argument is refused, not ignored", () => {
    expect(() => completionSpec(program(), [{ option: "--on", source: "managers" }])).toThrow(StaleCompletionRuleError);
    expect(() => completionSpec(program(), [{ command: "send msg", argument: "name", source: "seats" }])).toThrow(/"argument":"name"/);
  });

  it("a command, flag or choice that is not a plain word is refused rather than quoted into a script", () => {
    const p = program();
    p.command("odd").addOption(new Option("--mode <m>").choices(["a b"]));
    expect(() => completionSpec(p, [])).toThrow(/"a b"/);
  });
});
