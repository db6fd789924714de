import { describe, expect, it } from "vitest";
import type { EvaluationRow } from "../../../projections/evals.ts";
import { EvalBroker } from "../../../src/services/scheduler/eval-broker.ts";
import { type Clock, systemClock, type Timer } from "../../../src/util/clock.ts";
import { newEvaluation } from "../../../streams/evals.ts";

/**
 * What one delivery costs the broker on the main thread, as the worker
 * drives it for an evaluation that writes its outcome once: enqueue, a
 * dequeue that was waiting (with the worker's abort signal), the nack timer
 * paused and resumed around the write, the ack. The timing is taken on
 * demand only (docs/architecture.md quotes it),
 * CHRONOMAD_BROKER_FIGURES=1 npx vitest run test/services/scheduler/eval-broker-figures.test.ts
 * the timer count always.
 */
const enabled = process.env.CHRONOMAD_BROKER_FIGURES === "1";

function rows(n: number, prefix: string): EvaluationRow[] {
  return Array.from({ length: n }, (_, i) => ({
    ...newEvaluation({
      ID: `${prefix}-${i}`,
      Namespace: "default",
      Type: "batch",
      TriggeredBy: "job-register",
      JobID: `${prefix}-job-${i}`,
      CreateTime: 0,
    }),
    RelatedEvals: null,
    LeaderACL: "",
    CreateIndex: i + 1,
    ModifyIndex: i + 1,
  }));
}

/** The system clock, counting the timers set and cleared through it. */
function countingClock(): Clock & { ops: number } {
  const clock = {
    ops: 0,
    now: () => systemClock.now(),
    setTimeout(fn: () => void, ms: number): Timer {
      clock.ops++;
      return systemClock.setTimeout(fn, ms);
    },
    clearTimeout(timer: Timer): void {
      clock.ops++;
      systemClock.clearTimeout(timer);
    },
  };
  return clock;
}

async function cycle(
  broker: EvalBroker,
  evals: readonly EvaluationRow[],
  signal: AbortSignal,
): Promise<void> {
  for (const e of evals) {
    const waiting = broker.dequeue(["batch"], signal);
    broker.enqueue(e);
    const d = (await waiting)!;
    broker.pauseNack(e.ID, d.token);
    broker.resumeNack(e.ID, d.token);
    broker.ack(e.ID, d.token);
  }
}

describe("eval broker figures", () => {
  it("sets no clock timer per delivery while the nack timeout runs", async () => {
    const clock = countingClock();
    const broker = new EvalBroker(clock, { onFailed: () => undefined, onCancelable: () => undefined });
    broker.setEnabled(true);
    await cycle(broker, rows(1_000, "count"), new AbortController().signal);
    // One nack deadline timer for the whole run, not four operations per delivery.
    expect(clock.ops).toBeLessThanOrEqual(2);
    broker.close();
  });

  it.runIf(enabled)("one delivery's cost on the main thread", async () => {
    const broker = new EvalBroker(systemClock, { onFailed: () => undefined, onCancelable: () => undefined });
    broker.setEnabled(true);
    const signal = new AbortController().signal;
    await cycle(broker, rows(20_000, "warm"), signal);
    const out: number[] = [];
    for (let run = 0; run < 5; run++) {
      const evals = rows(50_000, `run${run}`);
      // CPU time, not wall time: the machine these figures come from is shared.
      const cpu0 = process.cpuUsage();
      await cycle(broker, evals, signal);
      const cpu = process.cpuUsage(cpu0);
      out.push((cpu.user + cpu.system) / evals.length);
    }
    broker.close();
    console.log(
      `eval broker: CPU µs per delivery, 5 runs of 50,000: ${out.map((x) => x.toFixed(2)).join(" ")}`,
    );
  });
});
