// What the kernel refuses for every runtime alike, from the capability flags it reads
// (runtime/adapter.ts), before an adapter builds anything: a run without a prompt, a run held to a
// JSON schema its CLI cannot hold to. (A seat's carried session where `carry` is false is refused
// by the manager as the spawn is admitted.) Adapters refuse only what is particular to their CLI.
import type { RuntimeAdapter } from "./adapter.js";

/** Why the kernel refuses a launch, and what to do instead. */
export interface KernelRefusal {
  message: string;
  remedy: string;
}

/** Why a headless run of `adapter` is refused before anything is built, or undefined when the kernel lets it through. */
export function runRefusal(
  adapter: Pick<RuntimeAdapter, "name" | "label" | "capabilities">,
  input: { prompt: string; jsonSchemaFile?: string | undefined },
): KernelRefusal | undefined {
  if (!adapter.capabilities.headlessRun)
    return { message: `${adapter.label} has no headless run (docs/runtimes.md); nothing was sent.`, remedy: "Spawn it as a seat instead." };
  if (input.prompt.trim() === "") return { message: "A run needs a prompt; nothing was sent.", remedy: "Give the prompt (`cotal run <persona> --prompt …`)." };
  if (input.jsonSchemaFile !== undefined && !adapter.capabilities.jsonSchema)
    return {
      message: `${adapter.label}'s headless run cannot be held to a JSON schema (docs/runtimes.md: it has no such option); nothing was sent.`,
      remedy: `Leave out --json-schema for a \`runtime: ${adapter.name}\` persona, or run it on a runtime that holds a run to one.`,
    };
  return undefined;
}
