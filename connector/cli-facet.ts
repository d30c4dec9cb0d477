// What the connector needs to know of the agent CLI that started it, by the runtime its launch
// names: that runtime's connector facet in the registry (runtimes/, docs/runtimes.md).
import type { ConnectorFacet, TranscriptReader } from "../runtime/index.js";
import { DEFAULT_RUNTIME, runtimeNamed } from "../runtimes/index.js";

/** A CLI's connector facet with its transcript reader filled in. */
export type CliFacet = ConnectorFacet & { readonly transcript: TranscriptReader };

/** A session file whose every line is one record already (Claude's shape). */
const asIs: TranscriptReader = (line) => [line];

const filled = (facet: ConnectorFacet): CliFacet => ({ ...facet, transcript: facet.transcript ?? asIs });

/**
 * The facet of the CLI a launch names. A launch that names none is the default runtime's session (a
 * hand-started connector from a plugin that predates COTAL_RUNTIME), as the connector always
 * assumed; a name the registry does not hold reads its session file as Claude's and says its own name.
 */
export function cliFacetOf(runtime: string | undefined): CliFacet {
  if (runtime === undefined) return filled(DEFAULT_RUNTIME.connector);
  return filled(runtimeNamed(runtime)?.connector ?? { meta: runtime });
}
