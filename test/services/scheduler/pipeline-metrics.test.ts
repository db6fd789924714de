import { describe, expect, it } from "vitest";
import { Metrics } from "../../../src/metrics/metrics.ts";
import {
  invokeTiming,
  NO_LABELS,
  PIPELINE_TIMINGS,
} from "../../../src/services/scheduler/pipeline-metrics.ts";

describe("pipeline metrics", () => {
  it("names invoke_scheduler by evaluation type, one string per type", () => {
    expect(invokeTiming("batch")).toBe(`${PIPELINE_TIMINGS.invoke[0]}.batch`);
    expect(invokeTiming("service")).toBe("nomad.nomad.worker.invoke_scheduler.service");
    expect(invokeTiming("batch")).toBe(invokeTiming("batch"));
  });

  it("records unlabelled samples under one empty label set", async () => {
    expect(Object.isFrozen(NO_LABELS)).toBe(true);
    expect(Object.keys(NO_LABELS)).toEqual([]);
    const metrics = new Metrics();
    metrics.sample(PIPELINE_TIMINGS.update[0], 2, NO_LABELS, PIPELINE_TIMINGS.update[1]);
    metrics.sample(PIPELINE_TIMINGS.update[0], 4, NO_LABELS, PIPELINE_TIMINGS.update[1]);
    const summary = await metrics.toJSON(new Date(0));
    const update = summary.Samples.find((s) => s.Name === PIPELINE_TIMINGS.update[0]);
    expect(update).toMatchObject({ Count: 2, Sum: 6, Labels: {} });
  });
});
