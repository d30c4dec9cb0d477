// Messages, cards and presence written by hand to the published Cotal shapes (protocol 0.2), as
// another client would write them: our reader accepts them, and refuses a wrong one naming the field.
import { describe, expect, it } from "vitest";
import { AgentCard, CotalMessage, decodeMessage, describeIssues, Presence, ValidationError } from "../../schemas/index.js";
import { wireFixture, wireValidators } from "../harness/wire-schemas.js";

const MESSAGES = ["channel-post.json", "dm.json", "anycast.json", "artifact.json", "extension.json"];
const bytes = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
const jsonSchema = wireValidators();

/** The issues zod reports for `value`, as "path: message" lines (empty when it parses). */
function issues(schema: { safeParse(v: unknown): { success: boolean; error?: unknown } }, value: unknown): string[] {
  const r = schema.safeParse(value);
  return r.success ? [] : describeIssues(r.error as Parameters<typeof describeIssues>[0]);
}

describe("published fixtures parse", () => {
  it.each(MESSAGES)("%s decodes as a message and validates against the exported JSON Schema", (name) => {
    const raw = wireFixture(name);
    const m = decodeMessage(bytes(raw));
    expect(m.id).toBe(raw.id);
    expect(m.ts).toBe(raw.ts);
    expect(m.parts).toHaveLength((raw.parts as unknown[]).length);
    expect(jsonSchema("CotalMessage", raw)).toEqual([]);
  });

  it("unknown top-level fields are ignored, not an error", () => {
    const m = decodeMessage(bytes(wireFixture("channel-post.json")));
    expect("x-client-trace" in m).toBe(false);
    expect(m.mentions).toEqual(["bob"]);
  });

  it("an extension part keeps every field of its own", () => {
    const m = decodeMessage(bytes(wireFixture("extension.json")));
    expect(m.parts[1]).toEqual({ kind: "Example-Org.ui.Card", title: "Deploy", rows: [["env", "staging"]], version: 3 });
  });

  it("an artifact part carries name, mediaType, digest and size", () => {
    const m = decodeMessage(bytes(wireFixture("artifact.json")));
    expect(m.parts[1]).toMatchObject({ kind: "artifact", name: "report.pdf", mediaType: "application/pdf", size: 48213 });
    expect((m.parts[1] as { digest: string }).digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it("a presence record with a condition object parses, every field kept", () => {
    const raw = wireFixture("presence.json");
    const p = Presence.parse(raw);
    expect(p.condition).toEqual({ code: "rate_limit", message: "429 from the provider", since: 1767225590000, source: "hook:StopFailure" });
    expect(p).toMatchObject({ status: "waiting", statusSince: 1767225590000, activitySince: 1767225595000, activeAt: 1767225599000, attention: "focus" });
    expect(p.channelModes).toEqual({ general: "quiet", random: "muted" });
    expect(p.card).toMatchObject({ kind: "agent", owner: "local", actor: "zed", protocolVersion: "0.2" });
    expect(jsonSchema("Presence", raw)).toEqual([]);
  });

  it("an AgentCard with skills and reserved meta keys parses", () => {
    const raw = wireFixture("agent-card.json");
    const c = AgentCard.parse(raw);
    expect(c.skills).toEqual([
      { id: "review", name: "Code review" },
      { id: "explain", name: "Explain a diff", description: "summarises a change for people" },
    ]);
    expect(c.meta).toMatchObject({ connector: "acme-bot", repo: "github.com/acme/app", branch: "main" });
    expect(jsonSchema("AgentCard", raw)).toEqual([]);
  });

  it("a message stored before 0.2 with an ISO ts is read, its ts normalised to epoch ms", () => {
    const legacy = { ...wireFixture("dm.json"), ts: "2026-01-01T00:00:00.000Z" };
    expect(decodeMessage(bytes(legacy)).ts).toBe(Date.parse("2026-01-01T00:00:00.000Z"));
    expect(() => CotalMessage.parse(legacy)).toThrow(); // writers never write it
  });
});

describe("non-conforming records are refused, naming the field", () => {
  const refusedMessage = (name: string) => {
    try {
      decodeMessage(bytes(wireFixture(`invalid/${name}`)));
    } catch (err) {
      expect(err).toBeInstanceOf(ValidationError);
      return (err as ValidationError).issues;
    }
    throw new Error(`${name} was accepted`);
  };

  it("an artifact digest without sha256: is refused at parts.N.digest", () => {
    expect(refusedMessage("artifact-bad-digest.json")).toEqual(['parts.0.digest: digest must be "sha256:" and 64 lowercase hex characters']);
    expect(jsonSchema("CotalMessage", wireFixture("invalid/artifact-bad-digest.json"))).not.toEqual([]);
  });

  it("an extension kind without a dot is refused at parts.N.kind", () => {
    expect(refusedMessage("extension-without-dot.json")).toEqual([
      "parts.0.kind: kind must be text, data, artifact, or a reverse-DNS extension kind such as ag-ui.frame",
    ]);
  });

  it("a message with two addresses is refused naming the three fields", () => {
    expect(refusedMessage("two-addresses.json")).toEqual(["exactly one of channel, to or toService must be set"]);
    expect(jsonSchema("CotalMessage", wireFixture("invalid/two-addresses.json"))).not.toEqual([]);
  });

  it("a built-in part missing a field names that field", () => {
    const m = { ...wireFixture("dm.json"), parts: [{ kind: "artifact", digest: `sha256:${"a".repeat(64)}`, size: 1 }] };
    expect(issues(CotalMessage, m)).toEqual([
      "parts.0.name: Invalid input: expected string, received undefined",
      "parts.0.mediaType: Invalid input: expected string, received undefined",
    ]);
  });

  it("presence with an ISO ts is refused at ts", () => {
    const raw = wireFixture("invalid/presence-iso-ts.json");
    expect(issues(Presence, raw)).toEqual(["ts: Invalid input: expected number, received string"]);
    expect(jsonSchema("Presence", raw)).not.toEqual([]);
  });

  it("presence with a bare-string condition (before 0.2) is refused at condition", () => {
    expect(issues(Presence, wireFixture("invalid/presence-condition-string.json"))).toEqual(["condition: Invalid input: expected object, received string"]);
  });

  it("a card without kind is refused at kind", () => {
    expect(issues(AgentCard, wireFixture("invalid/card-without-kind.json"))).toEqual(['kind: Invalid option: expected one of "agent"|"endpoint"']);
  });

  it("channelModes carries quiet or muted only: normal is absence", () => {
    const raw = { ...wireFixture("presence.json"), channelModes: { general: "normal" } };
    expect(issues(Presence, raw)).toEqual(['channelModes.general: Invalid option: expected one of "quiet"|"muted"']);
  });
});
