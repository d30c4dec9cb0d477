// cotal.yaml's `space` and `server` keys as `cotal up` flags (cli/team-file/team-server.ts), and a running
// mesh with other settings refused at the file's line unless the command line overrides the key.
import { describe, expect, it } from "vitest";
import type { MeshInfo } from "../../../cli/mesh-host/mesh-root.js";
import { parseTeamFile } from "../../../cli/team-file/team-file.js";
import { refuseServerDrift, teamServerFlags } from "../../../cli/team-file/team-server.js";

const FILE = "/srv/team/cotal.yaml";
const TEXT = `space: team
server:
  port: 4300
  sync: 2m
  storeDir: data/js
  limits:
    chatBytes: 2GiB
    chatMaxAge: 30d
    dmBacklog: 50
`;
const INFO: MeshInfo = {
  server: "nats://127.0.0.1:4300",
  space: "team",
  mode: "static",
  host: "127.0.0.1",
  port: 4300,
  storeDir: "/srv/team/data/js",
  startedAt: "2026-01-01T00:00:00.000Z",
  sync: "2m",
  limits: { chatBytes: 2 * 1024 ** 3, chatMaxAgeMs: 30 * 86_400_000, backlogPerSender: 50 },
};
const PARSED = { space: "team", port: 4300, sync: "2m", storeDir: "/srv/team/data/js", chatBytes: 2 * 1024 ** 3, chatMaxAge: 30 * 86_400_000, dmBacklog: 50 };

describe("cotal.yaml server settings", () => {
  it("are cotal up's flags, as the command line gives them (paths resolved against the file's folder)", () => {
    expect(teamServerFlags(parseTeamFile(TEXT, FILE)).flags).toEqual({
      space: "team",
      port: "4300",
      sync: "2m",
      storeDir: "/srv/team/data/js",
      chatBytes: "2GiB",
      chatMaxAge: "30d",
      dmBacklog: "50",
    });
  });

  it("a running mesh with the same settings passes; one with others is refused at each key's line", () => {
    const doc = parseTeamFile(TEXT, FILE);
    const server = teamServerFlags(doc);
    expect(() => refuseServerDrift(doc, server, new Set(), PARSED, INFO)).not.toThrow();
    const running = { ...INFO, port: 4222, limits: { ...INFO.limits, backlogPerSender: 10 } };
    expect(() => refuseServerDrift(doc, server, new Set(), PARSED, running)).toThrow(
      /cotal\.yaml:3: server\.port: the running mesh has port 4222[^]*cotal\.yaml:9: server\.limits\.dmBacklog: the running mesh has dmBacklog 10/,
    );
    // A key the command line gives is the command line's (cotal up checks that one itself).
    expect(() => refuseServerDrift(doc, server, new Set(["port", "dmBacklog"]), PARSED, running)).not.toThrow();
  });
});
