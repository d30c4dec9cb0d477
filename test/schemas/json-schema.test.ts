import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { renderJsonSchemas } from "../../schemas/internal.js";

const dir = join(import.meta.dirname, "../../docs/schema");

describe("exported JSON Schema", () => {
  const rendered = renderJsonSchemas();
  if (process.env.COTAL_UPDATE_SCHEMAS === "1") {
    for (const [file, text] of Object.entries(rendered)) writeFileSync(join(dir, file), text);
  }
  it("docs/schema/ holds exactly the rendered files (run `npm run schema:export` after changing schemas/)", () => {
    const committed = readdirSync(dir)
      .filter((f) => f.endsWith(".schema.json"))
      .sort();
    expect(committed).toEqual(Object.keys(rendered).sort());
  });
  it.each(Object.keys(rendered))("%s matches the zod source", (file) => {
    expect(readFileSync(join(dir, file), "utf8")).toBe(rendered[file]);
  });
  it("carries the token patterns, so other-language clients validate names too", () => {
    const msg = JSON.parse(rendered["CotalMessage.schema.json"]!);
    expect(JSON.stringify(msg)).toContain("[A-Za-z0-9_]");
    expect(msg.required).toEqual(expect.arrayContaining(["id", "ts", "space", "from", "parts"]));
  });
});
