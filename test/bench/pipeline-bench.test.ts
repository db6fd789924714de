import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { benchPipeline, drainWrites, type PipelineFigures } from "../../src/bench/pipeline-bench.ts";
import { runBench } from "../../src/cli/bench-command.ts";

/** runBench's stdout and stderr, and its exit code. */
async function bench(args: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  const sink = new PassThrough();
  let out = "";
  sink.on("data", (b: Buffer) => {
    out += b.toString();
  });
  const write = process.stderr.write;
  let err = "";
  process.stderr.write = ((s: string) => {
    err += s;
    return true;
  }) as typeof process.stderr.write;
  try {
    const code = await runBench(args, sink);
    return { code, out, err };
  } finally {
    process.stderr.write = write;
  }
}

describe("evaluation pipeline benchmark", () => {
  it("drains evaluations with no node to go to: each ends complete with a blocked follow-up, two records", async () => {
    const { code, out } = await bench(["--pipeline", "--jobs", "40", "--fsync", "never", "--json"]);
    expect(code).toBe(0);
    const f = (JSON.parse(out) as { pipeline: PipelineFigures }).pipeline;
    expect(f).toMatchObject({
      nodes: 0,
      jobs: 40,
      placements_per_s: 0,
      plan_refusals: 0,
    });
    expect(f.evaluations).toBe(40);
    // Two records each, the blocked evaluation then the outcome, in one submission.
    expect(f.records_per_eval).toBe(2);
    // The only other append: the configuration write that resumed the broker.
    expect(f.other_appends).toBe(1);
    expect(f.evals_per_s).toBeGreaterThan(0);
    expect(f.cpu_ms_per_eval).toBeGreaterThan(0);
    // Batched: 16 evaluations plan at once, so far fewer appends than evaluations.
    expect(f.appends).toBeGreaterThan(0);
    expect(f.appends).toBeLessThan(f.evaluations / 2);
    expect(f.appends_per_eval).toBe(Number((f.appends / 40).toPrecision(3)));
  }, 120_000);

  it("places every allocation when there are nodes", async () => {
    const f = await benchPipeline({ nodes: 30, jobs: 12, allocsPerJob: 3, workers: 2, fsync: "never" });
    expect(f.placements_per_s).toBeGreaterThan(0);
    expect(f.evaluations).toBe(12);
    // A plan record, then the outcome: two submissions each, batched with the others'.
    expect(f.records_per_eval).toBeGreaterThanOrEqual(2);
    expect(f.appends).toBeGreaterThan(0);
    expect(f.appends).toBeLessThanOrEqual(2 * 12);
    expect(f.other_appends).toBe(1);
  }, 120_000);

  it("counts appends per evaluation processed, to significant digits", () => {
    // A drain of 2,000 evaluations in 65 appends: two decimals made it 0.03, as if 60.
    const f = drainWrites({ evaluations: 2_000, appends: 65, records: 4_000, logAppends: 66 });
    expect(f).toEqual({
      evaluations: 2_000,
      appends: 65,
      appends_per_eval: 0.0325,
      evals_per_append: 30.8,
      records_per_eval: 2,
      other_appends: 1,
    });
    // Per evaluation processed, whatever the number of jobs.
    expect(drainWrites({ evaluations: 500, appends: 400, records: 1_000, logAppends: 400 })).toMatchObject({
      appends_per_eval: 0.8,
      evals_per_append: 1.3,
    });
    // Nothing processed: no ratio, not NaN or Infinity.
    expect(drainWrites({ evaluations: 0, appends: 0, records: 0, logAppends: 1 })).toMatchObject({
      appends_per_eval: 0,
      evals_per_append: 0,
      records_per_eval: 0,
      other_appends: 1,
    });
  });

  it("refuses options that belong to another benchmark", async () => {
    const nodes = await bench(["--nodes", "10"]);
    expect(nodes.code).toBe(2);
    expect(nodes.err).toContain("--nodes is for --pipeline");
    const both = await bench(["--pipeline", "--vs", "http://127.0.0.1:1"]);
    expect(both.code).toBe(2);
    expect(both.err).toContain("separate benchmarks");
    const warm = await bench(["--pipeline", "--warmup", "3"]);
    expect(warm.code).toBe(2);
    expect(warm.err).toContain("--warmup is for the registration benchmark");
    const workers = await bench(["--pipeline", "--workers", "0"]);
    expect(workers.code).toBe(2);
    expect(workers.err).toContain("--workers takes a positive integer");
  });
});
