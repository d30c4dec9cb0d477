// The Codex user's path, shared by the e2e tests that walk it: a fresh folder, the
// Responses-API double, a HOME whose own ~/.codex/config.toml names the double as provider and the
// variable its key is read from, `cotal up -d` from that shell, and every further step through the
// shipped CLI. The double is served from the test process, so every CLI call is asynchronous.
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findNatsServer } from "../../broker/index.js";
import { codexProviderConfig, ResponsesDouble, type ResponsesDoubleOptions } from "../../testbed/responses-double.js";
import { buildCli, cleanEnv, freePort, runCotal, type CliResult } from "./cli.js";
import { ok } from "./user-path.js";

/** The variable the user's provider config reads its key from. */
export const CODEX_KEY_VAR = "DOUBLE_PROVIDER_KEY";

export class CodexPath {
  private constructor(
    readonly project: string,
    readonly double: ResponsesDouble,
    readonly shell: NodeJS.ProcessEnv,
    private readonly timeoutMs: number,
  ) {}

  /** A fresh folder, the user's Codex config and key, and `cotal up -d` from that shell (plus `shell` variables). */
  static async start(o: {
    prefix: string;
    key: string;
    double?: ResponsesDoubleOptions;
    shell?: Record<string, string>;
    timeoutMs?: number;
  }): Promise<CodexPath> {
    await buildCli();
    const project = await mkdtemp(join(tmpdir(), o.prefix));
    const double = await ResponsesDouble.start(o.double ?? {});
    const home = join(project, "home");
    mkdirSync(join(home, ".codex"), { recursive: true });
    writeFileSync(join(home, ".codex", "config.toml"), codexProviderConfig(double.baseUrl, CODEX_KEY_VAR));
    const shell = cleanEnv({ HOME: home, NATS_SERVER_BIN: findNatsServer(), [CODEX_KEY_VAR]: o.key, ...o.shell });
    const p = new CodexPath(project, double, shell, o.timeoutMs ?? 120_000);
    ok(await p.cotal(["up", "-d", "--port", String(await freePort())]), "cotal up -d");
    return p;
  }

  /** `cotal <args>` in the folder, from the user's shell. */
  cotal(args: string[]): Promise<CliResult> {
    return runCotal(args, { cwd: this.project, env: this.shell, timeoutMs: this.timeoutMs });
  }

  /** `cotal down`, the double, the folder. */
  async close(): Promise<void> {
    await this.cotal(["down"]).catch(() => undefined);
    await this.double.close();
    await rm(this.project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  }
}
