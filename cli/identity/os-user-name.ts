// The default name a person acts as: the OS user name, checked and never rewritten. Who a command
// acts as (its credential, --as, --impersonate) is decided in acting-as.ts, from this default.
import { userInfo } from "node:os";
import { ALPHABETS, isToken } from "../../schemas/index.js";
import { UsageError } from "../terminal/errors.js";

/**
 * The name a person acts as when `--as` is not given: their OS user name, if it is a valid
 * actor name. It is refused, never rewritten (`first.last` does not become `first_last`).
 */
export function defaultActorName(username: () => string = () => userInfo().username): string {
  let name: string;
  try {
    name = username();
  } catch (cause) {
    throw new UsageError("Cannot tell who you are: the OS user name is unavailable.", { remedy: "Pass --as <name>.", cause });
  }
  if (!isToken("principal", name)) {
    throw new UsageError(`Your OS user name ${JSON.stringify(name)} is not a valid Cotal name: names use only ${ALPHABETS.principal.text}.`, {
      remedy: "Pass --as <name> with a name made of those characters.",
    });
  }
  return name;
}
