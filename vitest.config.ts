import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: two workers keep real nats-servers and real claude processes from starving.
    maxWorkers: 2,
    reporters: ["default"],
  },
});
