import { type PerformanceEntry, PerformanceObserver } from "node:perf_hooks";

/** Garbage collections of this process since the first caller asked: how many, and their total pause. */
export interface GcTotals {
  runs: number;
  pauseNs: number;
}

let totals: GcTotals | undefined;

/**
 * Counted by one observer of V8's `gc` performance entries for the whole
 * process (collections are per process, not per server), started on first
 * use: Nomad's nomad.runtime.total_gc_runs and total_gc_pause_ns.
 */
export function gcTotals(): Readonly<GcTotals> {
  if (totals) return totals;
  const counted: GcTotals = { runs: 0, pauseNs: 0 };
  totals = counted;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries() as PerformanceEntry[]) {
      counted.runs++;
      counted.pauseNs += Math.round(entry.duration * 1e6);
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  return counted;
}
