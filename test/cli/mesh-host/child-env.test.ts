// The environment background processes get: an allow-list, never the caller's secrets.
import { describe, expect, it } from "vitest";
import { childEnv } from "../../../cli/mesh-host/child-env.js";

describe("background process environment", () => {
  it("passes the allow-list (PATH, HOME, locale, TZ, NATS_SERVER_BIN, log settings) and nothing else", () => {
    const env = childEnv(
      { COTAL_LOG_LEVEL: "info" },
      {
        PATH: "/bin",
        HOME: "/home/x",
        LANG: "C.UTF-8",
        LC_ALL: "C",
        TZ: "UTC",
        NATS_SERVER_BIN: "/x/nats-server",
        COTAL_LOG_FORMAT: "json",
        AWS_SECRET_ACCESS_KEY: "s3cr3t",
        GITHUB_TOKEN: "t",
        COTAL_CREDS: "/home/x/alice.creds",
        COTAL_SERVER: "nats://elsewhere:4222",
        NODE_OPTIONS: "--require /tmp/evil.js",
      },
    );
    expect(env).toEqual({
      PATH: "/bin",
      HOME: "/home/x",
      LANG: "C.UTF-8",
      LC_ALL: "C",
      TZ: "UTC",
      NATS_SERVER_BIN: "/x/nats-server",
      COTAL_LOG_FORMAT: "json",
      COTAL_LOG_LEVEL: "info",
    });
  });
});
