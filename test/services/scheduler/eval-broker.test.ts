import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import type { EvaluationRow } from "../../../projections/evals.ts";
import { goTime } from "../../../projections/go-time.ts";
import { EvalBroker } from "../../../src/services/scheduler/eval-broker.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import { newEvaluation } from "../../../streams/evals.ts";
import { Scenario, serviceJob } from "./scenario.ts";

let seq = 0;
function evalRow(fields: Partial<EvaluationRow> & { JobID: string }): EvaluationRow {
  seq++;
  return {
    ...newEvaluation({
      ID: `eval-${seq}`,
      Namespace: "default",
      Type: "service",
      TriggeredBy: "job-register",
      CreateTime: 0,
      ...fields,
    }),
    RelatedEvals: null,
    LeaderACL: "",
    CreateIndex: seq,
    ModifyIndex: seq,
    ...fields,
  };
}

function broker(clock = new VirtualClock()) {
  const failed: string[] = [];
  const canceled: string[] = [];
  const b = new EvalBroker(clock, {
    onFailed: (e) => {
      failed.push(e.ID);
      b.ackFailed(e);
    },
    onCancelable: (evals) => canceled.push(...evals.map((e) => e.ID)),
  });
  b.setEnabled(true);
  return { b, clock, failed, canceled };
}

describe("eval broker", () => {
  it("keeps one abort listener on a worker's signal, however many waiting dequeues it served", async () => {
    const { b } = broker();
    const retired = new AbortController();
    for (let i = 0; i < 20; i++) {
      const waiting = b.dequeue(["service"], retired.signal);
      const e = evalRow({ JobID: `job-${i}` });
      b.enqueue(e);
      const d = await waiting;
      expect(d?.evaluation.ID).toBe(e.ID);
      b.ack(e.ID, d!.token);
    }
    expect(getEventListeners(retired.signal, "abort")).toHaveLength(1);
    const last = b.dequeue(["service"], retired.signal);
    retired.abort();
    expect(await last).toBeUndefined();
  });

  it("delivers by priority, at most one evaluation per job, and keeps only the newest pending one on ack", async () => {
    const { b, canceled } = broker();
    const low = evalRow({ JobID: "a", Priority: 10 });
    const high = evalRow({ JobID: "b", Priority: 90 });
    const a2 = evalRow({ JobID: "a", Priority: 10 });
    const a3 = evalRow({ JobID: "a", Priority: 10 });
    for (const e of [low, high, a2, a3]) b.enqueue(e);
    expect(b.stats()).toMatchObject({ ready: 2, pending: 2 });
    const first = await b.dequeue(["service"]);
    expect(first?.evaluation.ID).toBe(high.ID);
    const second = await b.dequeue(["service"]);
    expect(second?.evaluation.ID).toBe(low.ID);
    // Job a's next evaluation waits until `low` is acked; then only the newest pending one goes on.
    const waiting = b.dequeue(["service"]);
    b.ack(low.ID, second!.token);
    expect((await waiting)?.evaluation.ID).toBe(a3.ID);
    expect(canceled).toEqual([a2.ID]);
    expect(() => b.ack(high.ID, "wrong")).toThrow("Token does not match for Evaluation ID");
  });

  it("brings a nacked evaluation back after Nomad's delays, fails it at the delivery limit, and nacks on timeout", async () => {
    const { b, clock, failed } = broker();
    const e = evalRow({ JobID: "x" });
    b.enqueue(e);
    let d = await b.dequeue(["service"]);
    b.nack(e.ID, d!.token);
    expect(b.stats()).toMatchObject({ ready: 0, delayed: 1 });
    clock.advance(999);
    expect(b.stats().ready).toBe(0);
    clock.advance(1);
    d = await b.dequeue(["service"]);
    b.nack(e.ID, d!.token);
    clock.advance(19_999);
    expect(b.stats().ready).toBe(0);
    clock.advance(1);
    d = await b.dequeue(["service"]);
    // The third delivery times out (60 s) and reaches the limit.
    clock.advance(60_000);
    expect(failed).toEqual([e.ID]);
    expect(b.stats()).toMatchObject({ ready: 0, unacked: 0 });
  });

  it("holds an evaluation until its WaitUntil, and a paused nack timer does not fire", async () => {
    const { b, clock } = broker();
    const later = evalRow({ JobID: "w", WaitUntil: goTime(clock.now() + 30_000) });
    b.enqueue(later);
    clock.advance(29_999);
    expect(b.stats().ready).toBe(0);
    clock.advance(1);
    const d = await b.dequeue(["service"]);
    expect(d?.evaluation.ID).toBe(later.ID);
    b.pauseNack(later.ID, d!.token);
    clock.advance(120_000);
    expect(b.isOutstanding(later.ID, d!.token)).toBe(true);
    b.resumeNack(later.ID, d!.token);
    clock.advance(60_000);
    expect(b.isOutstanding(later.ID, d!.token)).toBe(false);
  });

  it("times out each delivery at its own deadline, paused time not counted", async () => {
    const { b, clock } = broker();
    const first = evalRow({ JobID: "t1" });
    const second = evalRow({ JobID: "t2" });
    b.enqueue(first);
    b.enqueue(second);
    const d1 = (await b.dequeue(["service"]))!;
    clock.advance(10_000);
    const d2 = (await b.dequeue(["service"]))!;
    expect([d1.evaluation.ID, d2.evaluation.ID]).toEqual([first.ID, second.ID]);
    // The first pauses at 15 s with 45 s left and resumes at 40 s: due at 85 s; the second at 70 s.
    clock.advance(5_000);
    b.pauseNack(first.ID, d1.token);
    clock.advance(25_000);
    b.resumeNack(first.ID, d1.token);
    clock.advance(29_999);
    expect([b.isOutstanding(first.ID, d1.token), b.isOutstanding(second.ID, d2.token)]).toEqual([true, true]);
    clock.advance(1);
    expect([b.isOutstanding(first.ID, d1.token), b.isOutstanding(second.ID, d2.token)]).toEqual([
      true,
      false,
    ]);
    clock.advance(14_999);
    expect(b.isOutstanding(first.ID, d1.token)).toBe(true);
    clock.advance(1);
    expect(b.isOutstanding(first.ID, d1.token)).toBe(false);
    // Both come back (after the nack delay); one acked at once, the other times out 60 s on.
    clock.advance(1_000);
    const d3 = (await b.dequeue(["service"]))!;
    b.ack(d3.evaluation.ID, d3.token);
    const d4 = (await b.dequeue(["service"]))!;
    clock.advance(59_999);
    expect(b.isOutstanding(d4.evaluation.ID, d4.token)).toBe(true);
    clock.advance(1);
    expect(b.isOutstanding(d4.evaluation.ID, d4.token)).toBe(false);
  });

  it("drops everything when disabled", async () => {
    const { b } = broker();
    b.enqueue(evalRow({ JobID: "p" }));
    b.setEnabled(false);
    expect(b.stats()).toMatchObject({ ready: 0, pending: 0, unacked: 0, delayed: 0 });
  });
});

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

describe("retiring a waiting worker", () => {
  it("releases a dequeue whose signal aborts, and the evaluation goes to the next worker", async () => {
    const { b } = broker();
    const retired = new AbortController();
    const first = b.dequeue(["service"], retired.signal);
    const second = b.dequeue(["service"]);
    retired.abort();
    expect(await first).toBeUndefined();
    const e = evalRow({ JobID: "r" });
    b.enqueue(e);
    expect((await second)?.evaluation.ID).toBe(e.ID);
    expect(await b.dequeue(["service"], retired.signal)).toBeUndefined();
  });
});

describe("blocked evaluations and the paused broker", () => {
  it("blocks what does not fit and places it when a node joins", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    await s.addNode();
    const big = serviceJob("big", 3, { Update: { MaxParallel: 0 } });
    big.TaskGroups[0]!.Tasks[0]!.Resources = { CPU: 1500, MemoryMB: 256 };
    await s.register(big);
    await s.idle();
    expect(s.allocs("big")).toHaveLength(2);
    const blocked = s.evals("big").filter((e) => e.Status === "blocked");
    expect(blocked).toHaveLength(1);
    expect(blocked[0]).toMatchObject({
      TriggeredBy: "queued-allocs",
      StatusDescription: "created to place remaining allocations",
    });
    expect(Object.values(blocked[0]!.ClassEligibility ?? {})).toEqual([true]);
    const summary = (await s.call("/v1/job/big/summary")).body as {
      Summary: Record<string, { Queued: number }>;
    };
    expect(summary.Summary.web?.Queued).toBe(1);

    await s.addNode();
    await s.idle();
    expect(s.allocs("big")).toHaveLength(3);
    expect(s.evals("big").find((e) => e.ID === blocked[0]!.ID)?.Status).toBe("complete");
  });

  it("holds every evaluation while PauseEvalBroker is set, and runs them once it is cleared", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    await s.addNode();
    const pause = (on: boolean) =>
      s.call("/v1/operator/scheduler/configuration", "PUT", {
        SchedulerAlgorithm: "binpack",
        PauseEvalBroker: on,
      });
    expect((await pause(true)).status).toBe(200);
    await s.register(serviceJob("held", 1));
    await s.idle();
    expect(s.allocs("held")).toHaveLength(0);
    expect(s.evals("held")[0]?.Status).toBe("pending");
    expect((await pause(false)).status).toBe(200);
    await s.idle();
    expect(s.allocs("held")).toHaveLength(1);
    expect(s.evals("held")[0]?.Status).toBe("complete");
  });
});
