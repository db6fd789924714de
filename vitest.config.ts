import { defineConfig } from "vitest/config";

// The same msgpack decoder as bin/chronomad.js selects.
const env = { MSGPACKR_NATIVE_ACCELERATION_DISABLED: "true" };

/**
 * The scheduler's stories, run again with passes computed on scheduler
 * threads (test/server-harness.ts reads CHRONOMAD_TEST_SCHEDULER_WORKERS;
 * every other test schedules on the main thread, in slices).
 */
const ON_THREADS = [
  "test/services/scheduler/*.test.ts",
  "test/services/heartbeat-watcher.test.ts",
  "test/nodesim/convergence.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    reporters: ["default"],
    projects: [
      {
        extends: true,
        // Builds ui/dist when stale, for the browser tests (test/ui) and /ui/'s routes.
        test: {
          name: "main",
          include: ["test/**/*.test.ts"],
          env,
          globalSetup: ["test/ui/build-ui.global.ts"],
        },
      },
      ...[1, 3].map((n) => ({
        extends: true as const,
        test: {
          name: `scheduler-on-${n}-thread${n === 1 ? "" : "s"}`,
          include: ON_THREADS,
          env: { ...env, CHRONOMAD_TEST_SCHEDULER_WORKERS: String(n) },
        },
      })),
    ],
  },
});
