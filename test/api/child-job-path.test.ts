import { describe, expect, it } from "vitest";
import { childJobPath } from "../../src/api/child-job-path.ts";

describe("childJobPath (Nomad's suffix routing of /v1/job/<id>)", () => {
  it("escapes the slash before a periodic or dispatched child's segment, and nothing else", () => {
    expect(childJobPath("/v1/job/report/periodic-1763800020")).toBe("/v1/job/report%2Fperiodic-1763800020");
    expect(childJobPath("/v1/job/etl/dispatch-1763800020-0a1b2c3d/allocations?all=true")).toBe(
      "/v1/job/etl%2Fdispatch-1763800020-0a1b2c3d/allocations?all=true",
    );
    expect(childJobPath("/v1/job/etl/dispatch-nightly-1763800020-0a1b2c3d/periodic-1763800080/summary")).toBe(
      "/v1/job/etl%2Fdispatch-nightly-1763800020-0a1b2c3d%2Fperiodic-1763800080/summary",
    );
    for (const url of [
      "/v1/job/etl/dispatch",
      "/v1/job/report/periodic/force",
      "/v1/job/report%2Fperiodic-1/summary",
      "/v1/jobs?prefix=report/periodic-1",
      "/v1/job/web?namespace=periodic-1",
    ]) {
      expect(childJobPath(url)).toBe(url);
    }
  });
});
