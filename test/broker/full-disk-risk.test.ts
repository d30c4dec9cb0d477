// Which servers lose acknowledged messages when a cluster node's disk fills (before 2.14 the node
// keeps leading consumers that step past what it could not store), and that a single server is
// never named: a full disk there refuses the write, so nothing is acknowledged that was not stored.
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fullDiskRisk, handlesStoreWriteErrors } from "../../broker/index.js";
import { NatsServer } from "../../testbed/nats-server.js";

describe("a full disk on a cluster node", () => {
  it("is handled from nats-server 2.14 on, as the INFO or --version prints it", () => {
    for (const v of ["2.14.0", "v2.14.1", "2.15.1", "v3.0.0"]) expect(handlesStoreWriteErrors(v), v).toBe(true);
    for (const v of ["2.10.27", "v2.10.0", "2.13.9", "v2.9.10", "", "unknown"]) expect(handlesStoreWriteErrors(v), v).toBe(false);
  });

  describe("on a single server", () => {
    let server: NatsServer;
    beforeAll(async () => {
      server = await NatsServer.start({ jetstream: true });
    });
    afterAll(async () => server?.stop());

    it("names no risk, whatever its version", async () => {
      const nc = await connect({ servers: server.url });
      try {
        expect(nc.info?.version).toMatch(/^2\./);
        expect(fullDiskRisk(nc)).toBeUndefined();
      } finally {
        await nc.close();
      }
    });
  });
});
