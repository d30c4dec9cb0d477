// Vitest global setup: before any worker starts, make sure a supported nats-server is here,
// fetching one the way `cotal up` does when the machine has none (testbed/nats-server.ts). Tests
// that look the binary up themselves (findNatsServer) then find it.
import { testNatsServer } from "../../testbed/nats-server.js";

export default function setup(): void {
  testNatsServer();
}
