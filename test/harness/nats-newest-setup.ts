// Vitest global setup of the `nats-newest` project: the newest supported nats-server (Debian
// sid's), fetched once when missing. When it cannot be had the project does not skip: every one of
// its files fails with the reason and the command to run (nats-newest-check.ts), and the other
// projects run on.
import type { TestProject } from "vitest/node";
import { natsServerVersion, newestNatsServer } from "../../testbed/nats-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Why the `nats-newest` project cannot run here; empty when its server is in place. */
    natsNewestProblem: string;
  }
}

export default function setup(project: TestProject): void {
  const say = (line: string) => process.stderr.write(`testbed: ${line}\n`);
  try {
    const path = newestNatsServer(process.env, say);
    say(`project nats-newest runs on nats-server ${natsServerVersion(path)?.text ?? "?"} (${path})`);
    project.provide("natsNewestProblem", "");
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    say(`*** PROJECT nats-newest CANNOT RUN: ${why}`);
    project.provide("natsNewestProblem", why);
  }
}
