import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startBenchServer } from "../../src/bench/bench-server.ts";
import { benchRegistration } from "../../src/bench/registration-bench.ts";
import { runBench } from "../../src/cli/bench-command.ts";

describe("registration benchmark", () => {
  it("registers batch jobs on an in-process chronomad and waits for every evaluation", async () => {
    const f = await benchRegistration({ jobs: 40, concurrency: 4, fsync: "never" });
    expect(f.jobs).toBe(40);
    expect(f.registrations_per_s).toBeGreaterThan(0);
    expect(f.register_p99_ms).toBeGreaterThanOrEqual(f.register_p50_ms);
    expect(f.evals_processed_seconds).toBeGreaterThanOrEqual(f.register_seconds);
    expect(f.server_cpu_percent).toBeGreaterThan(0);
  }, 60_000);

  it("measures any server by URL, the same way, and can leave the broker paused", async () => {
    const dir = await mkdtemp(join(tmpdir(), "chronomad-registration-test-"));
    const server = await startBenchServer(["--data-dir", dir, "--fsync", "never"]);
    try {
      const url = `http://${server.address}`;
      const f = await benchRegistration({ url, jobs: 20, concurrency: 2 });
      expect(f.server_cpu_percent).toBeUndefined();
      expect(f.evals_processed_seconds).toBeGreaterThan(0);
      // A second run counts only its own jobs' evaluations.
      const paused = await benchRegistration({ url, jobs: 20, concurrency: 2, pauseBroker: true });
      expect(paused.evals_processed_seconds).toBe(0);
      const config = (await (await fetch(`${url}/v1/operator/scheduler/configuration`)).json()) as {
        SchedulerConfig: { PauseEvalBroker: boolean };
      };
      expect(config.SchedulerConfig.PauseEvalBroker).toBe(false);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("refuses registration options without --registration or --vs", async () => {
    const err = process.stderr.write;
    let said = "";
    process.stderr.write = ((s: string) => {
      said += s;
      return true;
    }) as typeof process.stderr.write;
    try {
      expect(await runBench(["--jobs", "10"], process.stdout)).toBe(2);
      expect(await runBench(["--registration", "--jobs", "x"], process.stdout)).toBe(2);
    } finally {
      process.stderr.write = err;
    }
    expect(said).toContain("--jobs is for the registration benchmark");
    expect(said).toContain("positive integer");
  });
});
