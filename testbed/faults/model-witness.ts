// A real Claude Code seat in the lab, and the witness of what its model was shown. The seat is the
// `claude` CLI on the leaf host, spawned by the manager like any seat; its model is the double,
// served by the runner on its lab address. Each main-loop request's new turn carries the mail the
// connector handed over, one `[cotal DM from … · id <id> · possible repeat]` header per message:
// each header is a hand-over to the model, with its repeat flag. The model answers "OK.", so a
// turn ends at once and the next mail wakes the seat again. Each request is logged in the run
// directory (`claude-model.jsonl`, kept with --keep).
import { appendFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { claudeEnv } from "../claude-env.js";
import { ModelDouble, newTurnText, RequestKind, type RecordedRequest } from "../model-double.js";

/** The Claude seat's name (no role: the workload's anycasts go to the echo seats). */
export const MODEL_SEAT = "c1";

/** One message a model was shown. */
export interface ModelHandOver {
  id: string;
  /** Its header carried the possible-repeat flag. */
  flaggedRepeat: boolean;
}

/** A framed message's header (connector/framing.ts frameHeader): its id, then its flags. */
const HEADER = /\[cotal [^\]\n]*? · id ([^\s·\]]+)((?: · [^·\]\n]+)*)\]/g;

/** The messages a turn's text hands over, in order. */
export function handedInTurn(text: string): ModelHandOver[] {
  return [...text.matchAll(HEADER)].map((m) => ({ id: m[1]!, flaggedRepeat: (m[2] ?? "").includes("possible repeat") }));
}

export class ModelWitness {
  private constructor(
    private readonly double: ModelDouble,
    private readonly home: string,
  ) {}

  /**
   * Serve the double on `host` (the runner's lab address). `handed` is called for each message a
   * main-loop request shows the model for the first time in its turn.
   */
  static async start(host: string, dir: string, handed: (h: ModelHandOver) => void): Promise<ModelWitness> {
    const home = join(dir, "claude-home");
    mkdirSync(home, { recursive: true });
    // Every request, for a run kept with --keep: what the model was shown, turn by turn.
    const log = join(dir, "claude-model.jsonl");
    const onRequest = (r: RecordedRequest) => {
      const turn = r.kind === RequestKind.main ? newTurnText(r) : "";
      appendFileSync(log, `${JSON.stringify({ seq: r.seq, at: r.receivedAt, kind: r.kind, path: r.path, turn })}\n`);
      for (const h of handedInTurn(turn)) handed(h);
    };
    return new ModelWitness(await ModelDouble.start([], { host, onRequest }), home);
  }

  /**
   * What the manager needs to run the seat: the double's URL and a key, a HOME of its own, the
   * offline switches, and the `claude` installed beside the bundle (`dist/cotal.mjs`'s project).
   */
  managerEnv(cotal: string): NodeJS.ProcessEnv {
    const tmp = join(this.home, "tmp");
    mkdirSync(tmp, { recursive: true, mode: 0o700 });
    return {
      ...claudeEnv({ baseUrl: this.double.url, home: this.home }),
      TMPDIR: tmp,
      COTAL_CLAUDE_BIN: join(dirname(dirname(cotal)), "node_modules", ".bin", "claude"),
    };
  }

  async stop(): Promise<void> {
    await this.double.close();
  }
}
