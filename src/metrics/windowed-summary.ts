import type { Labels } from "./metrics.ts";

/**
 * Samples kept per generation: beyond it a generation holds a uniform sample
 * (reservoir) of what it saw, so a burst costs bounded memory.
 */
const RESERVOIR = 4_096;

interface Series {
  readonly labels: Labels;
  count: number;
  sum: number;
  /** This generation's samples and how many it saw (more than it holds once the reservoir is full). */
  current: number[];
  seen: number;
  /** The generation before, read with this one. */
  previous: number[];
  rotateAt: number;
}

/** The shape prom-client's Registry reads from a metric (its `get()`). */
interface SummaryValue {
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
  readonly metricName?: string;
}

/**
 * A Prometheus summary over a sliding window, in the place of prom-client's
 * Summary, whose time-windowed t-digests cost several microseconds per
 * observation (each goes into every age bucket's tree); timings are observed
 * on every request, commit and evaluation. Here an observation is an array
 * push; the quantiles are computed (sorted, nearest rank) when scraped, from
 * the samples of the last one to two generations, as prom-client's age
 * buckets read the last `maxAge / ageBuckets` to `maxAge` seconds. `_sum` and
 * `_count` are since the start, as prom-client's. Registered in a
 * prom-client Registry, which reads it through `get()`.
 */
export class WindowedSummary {
  readonly type = "summary";
  readonly aggregator = "sum";
  private readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly percentiles: readonly number[],
    /** How long a generation collects; the window read is one to two of them. */
    private readonly generationMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** `key` identifies `labels` (the caller has computed it for its own aggregates already). */
  observe(key: string, labels: Labels, value: number): void {
    let s = this.series.get(key);
    const t = this.now();
    if (!s) {
      s = { labels, count: 0, sum: 0, current: [], seen: 0, previous: [], rotateAt: t + this.generationMs };
      this.series.set(key, s);
    } else if (t >= s.rotateAt) {
      this.rotate(s, t);
    }
    s.count++;
    s.sum += value;
    const n = s.seen++;
    if (n < RESERVOIR) s.current.push(value);
    else {
      const j = Math.floor(Math.random() * (n + 1));
      if (j < RESERVOIR) s.current[j] = value;
    }
  }

  async get(): Promise<{
    name: string;
    help: string;
    type: "summary";
    values: SummaryValue[];
    aggregator: string;
  }> {
    const t = this.now();
    const values: SummaryValue[] = [];
    for (const s of this.series.values()) {
      if (t >= s.rotateAt) this.rotate(s, t);
      const window = Float64Array.from(s.previous.length > 0 ? s.previous.concat(s.current) : s.current);
      window.sort();
      for (const p of this.percentiles)
        values.push({ labels: { quantile: p, ...s.labels }, value: nearestRank(window, p) });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** prom-client's Registry.resetMetrics. */
  reset(): void {
    for (const s of this.series.values()) {
      s.count = 0;
      s.sum = 0;
      s.current = [];
      s.previous = [];
      s.seen = 0;
    }
  }

  private rotate(s: Series, t: number): void {
    // A series idle for more than a generation has nothing left in the window.
    s.previous = t - s.rotateAt < this.generationMs ? s.current : [];
    s.current = [];
    s.seen = 0;
    s.rotateAt = t + this.generationMs;
  }
}

/** 0 for an empty window, as prom-client's Summary reads an empty digest. */
function nearestRank(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return sorted[i] ?? 0;
}
