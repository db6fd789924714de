import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // The same msgpack decoder as bin/chronomad.js selects.
    env: { MSGPACKR_NATIVE_ACCELERATION_DISABLED: "true" },
    reporters: ["default"],
  },
});
