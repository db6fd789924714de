import type { MetricValue } from "prom-client";

/**
 * At most this many samples per label set per slot; past it a slot keeps a
 * uniform random subset (reservoir sampling), so a flood of requests costs
 * bounded memory and the quantiles stay unbiased.
 */
const MAX_SLOT_SAMPLES = 32_768;

export interface WindowedSummaryConfig {
  readonly name: string;
  readonly help: string;
  readonly percentiles: readonly number[];
  /** The window the quantiles cover: the last `maxAgeSeconds`, at least half of it (see WindowedSummary). */
  readonly maxAgeSeconds: number;
  readonly now?: () => number;
}

/** The values of one label set over the current slot and the one before it. */
class SeriesWindow {
  count = 0;
  sum = 0;
  previous: number[] = [];
  current: number[] = [];
  /** Samples offered to `current`, kept or not (reservoir sampling). */
  seen = 0;
  slotStart: number;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    now: number,
  ) {
    this.slotStart = now;
  }

  add(value: number, now: number, slotMs: number): void {
    this.count++;
    this.sum += value;
    if (now - this.slotStart >= slotMs) this.rotate(now, slotMs);
    this.seen++;
    if (this.current.length < MAX_SLOT_SAMPLES) this.current.push(value);
    else {
      const at = Math.floor(Math.random() * this.seen);
      if (at < MAX_SLOT_SAMPLES) this.current[at] = value;
    }
  }

  rotate(now: number, slotMs: number): void {
    const slots = Math.floor((now - this.slotStart) / slotMs);
    if (slots <= 0) return;
    // Two or more slots later, the one before is as empty as the current.
    this.previous = slots === 1 ? this.current : [];
    this.current = [];
    this.seen = 0;
    this.slotStart += slots * slotMs;
  }

  /** Nearest-rank quantiles over both slots; 0 with no sample, as prom-client's summary answers. */
  quantiles(percentiles: readonly number[]): number[] {
    const n = this.previous.length + this.current.length;
    if (n === 0) return percentiles.map(() => 0);
    const sorted = new Float64Array(n);
    sorted.set(this.previous);
    sorted.set(this.current, this.previous.length);
    sorted.sort();
    return percentiles.map((p) => sorted[Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1))]!);
  }
}

/** What a prom-client Registry reads of a summary when it scrapes (its own metrics' get() answers this shape). */
export interface SummaryValues {
  readonly name: string;
  readonly help: string;
  readonly type: "summary";
  readonly values: MetricValue<string>[];
  readonly aggregator: "sum";
}

/**
 * A Prometheus summary (quantiles over a sliding window, count and sum since
 * start) that keeps its samples in plain arrays and sorts them only when
 * scraped. prom-client's Summary feeds every observation into t-digests
 * (one per age bucket), which cost a few percent of the server's CPU on
 * the request path; scrapes are rare and requests are not. The window is
 * split in two slots of `maxAgeSeconds / 2`: the quantiles cover the
 * current slot and the one before, as prom-client's two age buckets do.
 * It is registered in a prom-client Registry like its own metrics (name,
 * help, type, get()), so the text exposition is prom-client's.
 */
export class WindowedSummary {
  readonly type = "summary" as const;
  readonly name: string;
  readonly help: string;
  private readonly percentiles: readonly number[];
  private readonly slotMs: number;
  private readonly now: () => number;
  private readonly series = new Map<string, SeriesWindow>();

  constructor(config: WindowedSummaryConfig) {
    this.name = config.name;
    this.help = config.help;
    this.percentiles = config.percentiles;
    this.slotMs = (config.maxAgeSeconds * 1000) / 2;
    this.now = config.now ?? Date.now;
  }

  /** Records `value` for the label set `labels`, whose key the caller computed once (see Metrics). */
  observe(key: string, labels: Readonly<Record<string, string>>, value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`${this.name}: not a finite number: ${value}`);
    const now = this.now();
    let s = this.series.get(key);
    if (!s) {
      s = new SeriesWindow(labels, now);
      this.series.set(key, s);
    }
    s.add(value, now, this.slotMs);
  }

  get(): Promise<SummaryValues> {
    const now = this.now();
    const values: MetricValue<string>[] = [];
    for (const s of this.series.values()) {
      s.rotate(now, this.slotMs);
      const qs = s.quantiles(this.percentiles);
      this.percentiles.forEach((quantile, i) => {
        values.push({ labels: { quantile, ...s.labels }, value: qs[i]! });
      });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum } as MetricValue<string>);
      values.push({
        metricName: `${this.name}_count`,
        labels: s.labels,
        value: s.count,
      } as MetricValue<string>);
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: "sum" });
  }
}
