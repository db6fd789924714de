import { describe, expect, it } from "vitest";
import type { EvaluationRow } from "../../../projections/evals.ts";
import {
  asksForVolume,
  BlockedEvals,
  type VolumeAsk,
} from "../../../src/services/scheduler/blocked-evals.ts";
import { EvalBroker } from "../../../src/services/scheduler/eval-broker.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import { newEvaluation } from "../../../streams/evals.ts";

let seq = 0;
function blockedEval(jobID: string, snapshotIndex: number): EvaluationRow {
  seq++;
  return {
    ...newEvaluation({
      ID: `eval-${seq}`,
      Namespace: "default",
      Type: "service",
      TriggeredBy: "queued-allocs",
      JobID: jobID,
      CreateTime: 0,
    }),
    Status: "blocked",
    SnapshotIndex: snapshotIndex,
    ClassEligibility: { c1: true },
    RelatedEvals: null,
    LeaderACL: "",
    CreateIndex: snapshotIndex,
    ModifyIndex: snapshotIndex,
  } as EvaluationRow;
}

function tracker(asks: Record<string, VolumeAsk[]>) {
  const broker = new EvalBroker(new VirtualClock(), { onFailed: () => {}, onCancelable: () => {} });
  broker.setEnabled(true);
  const blocked = new BlockedEvals(broker, {
    onDuplicates: () => {},
    volumesOf: (e) => asks[e.JobID] ?? [],
  });
  blocked.setEnabled(true);
  return { broker, blocked };
}

const data: VolumeAsk = { namespace: "default", source: "data", perAlloc: false };
const logs: VolumeAsk = { namespace: "default", source: "logs", perAlloc: true };

describe("blocked evaluations waiting for a CSI volume", () => {
  it("are released when a claim of a volume they ask for is freed, and only then", () => {
    const { broker, blocked } = tracker({ db: [data], web: [] });
    blocked.block(blockedEval("db", 10));
    blocked.block(blockedEval("web", 10));
    blocked.unblockVolume("default", "other", 11);
    blocked.unblockVolume("elsewhere", "data", 12);
    expect(blocked.size).toBe(2);
    blocked.unblockVolume("default", "data", 13);
    expect(blocked.size).toBe(1);
    expect(broker.stats().ready).toBe(1);
  });

  it("are released at once when the volume was freed after the tables they were computed against", () => {
    const { blocked } = tracker({ logs: [logs] });
    blocked.unblockVolume("default", "logs[2]", 20);
    blocked.block(blockedEval("logs", 15));
    expect(blocked.size).toBe(0);
    blocked.block(blockedEval("logs", 25));
    expect(blocked.size).toBe(1);
  });

  it("match a per_alloc request to any of its indexed volumes, and a plain one to its source only", () => {
    expect(asksForVolume(logs, "default", "logs[3]")).toBe(true);
    expect(asksForVolume(logs, "default", "logs")).toBe(true);
    expect(asksForVolume(logs, "default", "logsX[3]")).toBe(false);
    expect(asksForVolume(data, "default", "data[0]")).toBe(false);
    expect(asksForVolume(data, "other", "data")).toBe(false);
  });
});
