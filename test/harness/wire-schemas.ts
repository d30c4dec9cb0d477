// The exported JSON Schemas (docs/schema/), compiled with ajv: an independent check of what we
// write and read, not our own zod.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
// CommonJS packages: their class and plugin are also on `.default`, which types and runtime agree on.
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const SCHEMA_DIR = join(import.meta.dirname, "../../docs/schema");

/** A validator per exported schema name (`CotalMessage`, `Presence`, …). */
export function wireValidators(): (name: string, value: unknown) => string[] {
  const ajv = new Ajv2020.default({ allErrors: true, strict: false });
  addFormats.default(ajv);
  for (const f of readdirSync(SCHEMA_DIR).filter((n) => n.endsWith(".schema.json"))) {
    ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, f), "utf8")) as object);
  }
  return (name, value) => {
    const validate = ajv.getSchema(`https://cotal.dev/schema/${name}.schema.json`);
    if (!validate) throw new Error(`no exported schema ${name}`);
    return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? ""}`);
  };
}

/** Read a wire fixture (test/fixtures/wire/…) as parsed JSON. */
export function wireFixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(import.meta.dirname, "../fixtures/wire", name), "utf8")) as Record<string, unknown>;
}
