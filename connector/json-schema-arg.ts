// `cotal_run`'s `jsonSchema` argument: a JSON Schema object, checked for shape before a run is
// dispatched (a run with a schema its CLI cannot use costs a model call and then fails). The check
// is structural, the keywords a JSON Schema for model output uses: each must have its type, and a
// schema object must say something (an object of none of these keywords is a data shape, not a
// schema). The advertised JSON Schema of the argument stays "an object".
import { z } from "zod";

const TYPES = ["string", "number", "integer", "boolean", "object", "array", "null"] as const;

type Check = (value: unknown, at: string) => string | undefined;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const typeName = (v: unknown) => (Array.isArray(v) ? "an array" : v === null ? "null" : `a ${typeof v}`);

const schemaAt: Check = (v, at) =>
  typeof v === "boolean" ? undefined : isObject(v) ? checkSchema(v, at) : `${at} must be a schema object, not ${typeName(v)}`;
const schemaList: Check = (v, at) =>
  Array.isArray(v) && v.length ? v.map((s, i) => schemaAt(s, `${at}[${i}]`)).find(Boolean) : `${at} must be a non-empty array of schemas`;
const schemaMap: Check = (v, at) =>
  isObject(v)
    ? Object.entries(v)
        .map(([k, s]) => schemaAt(s, `${at}.${k}`))
        .find(Boolean)
    : `${at} must be an object of schemas`;
const nonNegative: Check = (v, at) => (Number.isInteger(v) && (v as number) >= 0 ? undefined : `${at} must be a non-negative integer`);
const number: Check = (v, at) => (typeof v === "number" && Number.isFinite(v) ? undefined : `${at} must be a number`);
const text: Check = (v, at) => (typeof v === "string" ? undefined : `${at} must be a string`);
const oneType = (t: unknown) => (TYPES as readonly unknown[]).includes(t);

/** The keywords checked, and how. Other keywords ($schema, $id, $ref, format, …) pass as they are. */
const KEYWORDS: Record<string, Check> = {
  type: (v, at) =>
    oneType(v) || (Array.isArray(v) && v.length > 0 && v.every(oneType))
      ? undefined
      : `${at} must be one of ${TYPES.join(", ")} (or an array of them), not ${JSON.stringify(v)}`,
  properties: schemaMap,
  patternProperties: schemaMap,
  $defs: schemaMap,
  definitions: schemaMap,
  additionalProperties: schemaAt,
  items: (v, at) => (Array.isArray(v) ? schemaList(v, at) : schemaAt(v, at)),
  prefixItems: schemaList,
  not: schemaAt,
  anyOf: schemaList,
  oneOf: schemaList,
  allOf: schemaList,
  required: (v, at) => (Array.isArray(v) && v.every((k) => typeof k === "string") ? undefined : `${at} must be an array of property names`),
  enum: (v, at) => (Array.isArray(v) && v.length ? undefined : `${at} must be a non-empty array`),
  const: () => undefined,
  description: text,
  title: text,
  pattern: (v, at) => {
    if (typeof v !== "string") return `${at} must be a string`;
    try {
      new RegExp(v, "u");
      return undefined;
    } catch {
      return `${at} is not a valid regular expression`;
    }
  },
  minimum: number,
  maximum: number,
  exclusiveMinimum: number,
  exclusiveMaximum: number,
  multipleOf: number,
  minLength: nonNegative,
  maxLength: nonNegative,
  minItems: nonNegative,
  maxItems: nonNegative,
  minProperties: nonNegative,
  maxProperties: nonNegative,
  uniqueItems: (v, at) => (typeof v === "boolean" ? undefined : `${at} must be true or false`),
};

/** Other keywords that make an object a schema (not checked further). */
const OTHER_KEYWORDS = new Set([
  "$schema",
  "$id",
  "$ref",
  "$comment",
  "format",
  "default",
  "examples",
  "if",
  "then",
  "else",
  "dependentRequired",
  "dependentSchemas",
]);

function checkSchema(s: Record<string, unknown>, at: string): string | undefined {
  const keys = Object.keys(s);
  if (keys.length && !keys.some((k) => k in KEYWORDS || OTHER_KEYWORDS.has(k))) {
    return `${at} is not a JSON Schema: none of its keys (${keys.join(", ")}) is a JSON Schema keyword; e.g. {"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`;
  }
  for (const k of keys) {
    const problem = KEYWORDS[k]?.(s[k], `${at}.${k}`);
    if (problem) return problem;
  }
  return undefined;
}

/** `cotal_run`'s `jsonSchema`: an object that is a JSON Schema, refused with the first problem's path. */
export const JsonSchemaArg = z
  .record(z.string(), z.unknown())
  .superRefine((s, ctx) => {
    const problem = checkSchema(s, "jsonSchema");
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  })
  .describe("A JSON Schema object the output must match; it then comes back parsed.");
