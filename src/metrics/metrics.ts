import {
  Counter,
  Gauge,
  type Metric,
  type MetricObjectWithValues,
  type MetricValue,
  Registry,
} from "prom-client";
import { WindowedSummary } from "./windowed-summary.ts";

export type Labels = Readonly<Record<string, string>>;

interface Aggregate {
  /** The label set of the series, as first recorded. */
  readonly labels: Labels;
  count: number;
  sum: number;
  min: number;
  max: number;
  /** Running mean and squared deviation (Welford), so no samples are kept. */
  mean: number;
  m2: number;
}

type Kind = "counter" | "gauge" | "sample";

/** One metric name: its prom-client metric in the registry, and what the JSON form needs besides. */
interface Family {
  readonly name: string;
  readonly kind: Kind;
  readonly labelNames: readonly string[];
  readonly metric: Counter | Gauge | WindowedSummary;
  /** Counters and samples: count, min, max and deviation per label set, which Prometheus does not carry. */
  readonly aggregates: Map<string, Aggregate>;
  /** Gauges: how to read each label set's value when scraped. */
  readonly readers: Map<string, { labels: Labels; read: () => number }>;
  /** Gauges whose label sets are known only when scraped. */
  readAll?: () => Iterable<readonly [Labels, number]>;
  /**
   * The label set recorded last, by identity, with its key and series:
   * callers on a hot path pass the same labels object each time (a
   * request's method, none), and are spared the key's string and lookup.
   */
  lastLabels?: Labels;
  lastKey: string;
  lastAggregate?: Aggregate;
}

/** No labels: one object, so a call without labels finds its series by identity. */
const NO_LABELS: Labels = Object.freeze({});

/** go-metrics' in-memory sink interval: counters' Rate is their sum per second over it. */
const INTERVAL_SECONDS = 10;

/**
 * Nomad's Prometheus summaries (go-metrics' prometheus sink): these quantiles
 * over a 10 s window, read as prom-client's two age buckets did (the last 5 to 10 s).
 */
const SUMMARY_PERCENTILES = [0.5, 0.9, 0.99];
const SUMMARY_GENERATION_MS = 5_000;

const promName = (name: string) => name.replace(/[^a-zA-Z0-9_:]/g, "_").replace(/^([0-9])/, "_$1");
const labelKey = (labels: Labels) => {
  const keys = Object.keys(labels);
  if (keys.length === 0) return "";
  // Most series have one label (a method, an operation): no sort, no array.
  if (keys.length === 1) return `${keys[0]}=${labels[keys[0]!]}`;
  return keys
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(";");
};

/** go-metrics' MetricsSummary: what `GET /v1/metrics` answers. */
export interface MetricsSummary {
  readonly Timestamp: string;
  readonly Gauges: { Name: string; Value: number; Labels: Labels }[];
  readonly Points: never[];
  readonly Counters: SampledValue[];
  readonly Samples: SampledValue[];
}

interface SampledValue {
  Name: string;
  Count: number;
  Rate: number;
  Sum: number;
  Min: number;
  Max: number;
  Mean: number;
  Stddev: number;
  Labels: Labels;
}

/**
 * Counters, gauges and timing samples, kept in one prom-client Registry
 * that both forms of `/v1/metrics` are read from: Prometheus text (with
 * HELP and TYPE lines; samples as summaries, as Nomad's Prometheus sink
 * makes them) and Nomad's JSON (go-metrics' in-memory sink shape). Names
 * are Nomad's dotted ones (`nomad.nomad.broker.total_ready`), turned into
 * Prometheus names the way Nomad does (dots to underscores). Gauges are
 * read when scraped, so they cost nothing in between.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly families = new Map<string, Family>();
  private readonly byPromName = new Map<string, Family>();

  /**
   * Counts `by` (not negative). The Prometheus counter is not
   * incremented here: it is set from the series' sums when scraped (its
   * `collect`), which spares every call prom-client's label hashing and
   * checks (about half a microsecond on each request's path).
   */
  incr(name: string, by = 1, labels: Labels = NO_LABELS, help?: string): void {
    // What prom-client's inc refused (it lets NaN through, and so does this).
    if (by && !Number.isFinite(by)) throw new TypeError(`metric ${name}: not a valid number: ${by}`);
    if (by < 0) throw new Error(`metric ${name}: a counter cannot decrease`);
    const f = this.family(name, "counter", labels, help);
    add(this.series(f, labels), by);
  }

  /** Records a duration in milliseconds (or any measured value). */
  sample(name: string, value: number, labels: Labels = NO_LABELS, help?: string): void {
    const f = this.family(name, "sample", labels, help);
    const a = this.series(f, labels);
    (f.metric as WindowedSummary).observe(f.lastKey, a.labels, value);
    add(a, value);
  }

  /** The series of `labels` in `f`, made at its first record; `f.lastKey` is its key after. */
  private series(f: Family, labels: Labels): Aggregate {
    if (labels === f.lastLabels) return f.lastAggregate!;
    const key = labelKey(labels);
    let a = f.aggregates.get(key);
    if (a === undefined) {
      checkLabels(f, labels);
      a = { labels, count: 0, sum: 0, min: 0, max: 0, mean: 0, m2: 0 };
      f.aggregates.set(key, a);
    }
    f.lastLabels = labels;
    f.lastKey = key;
    f.lastAggregate = a;
    return a;
  }

  /** A gauge read when scraped; a read that throws leaves the series out of that scrape. */
  gauge(name: string, read: () => number, labels: Labels = {}, help?: string): void {
    const f = this.family(name, "gauge", labels, help);
    f.readers.set(labelKey(labels), { labels, read });
  }

  /** A gauge whose label sets are read when scraped (one series per entry `readAll` yields). */
  gauges(
    name: string,
    labelNames: readonly string[],
    readAll: () => Iterable<readonly [Labels, number]>,
    help?: string,
  ): void {
    const f = this.family(name, "gauge", labelNames, help);
    f.readAll = readAll;
  }

  /** Prometheus text exposition format 0.0.4. */
  toPrometheus(): Promise<string> {
    return this.registry.metrics();
  }

  /** The shape of Nomad's `GET /v1/metrics` (go-metrics' in-memory sink). */
  async toJSON(now: Date): Promise<MetricsSummary> {
    const summary = {
      Timestamp: goIntervalTime(now),
      Gauges: [] as MetricsSummary["Gauges"],
      Points: [] as never[],
      Counters: [] as SampledValue[],
      Samples: [] as SampledValue[],
    };
    // prom-client's typings say MetricObject and an enum; at run time these
    // are its Metric instances, whose `type` is the Prometheus type name.
    for (const metric of this.registry.getMetricsAsArray() as unknown as Metric[]) {
      const got = await metric.get();
      const family = this.byPromName.get(got.name);
      const name = family?.name ?? got.name;
      switch (got.type as unknown as string) {
        case "gauge":
          for (const v of got.values)
            summary.Gauges.push({ Name: name, Value: v.value, Labels: labelsOf(v) });
          break;
        case "counter":
          for (const v of got.values) {
            const labels = labelsOf(v);
            const agg = family?.aggregates.get(labelKey(labels)) ?? single(v.value);
            summary.Counters.push(sampled(name, agg, labels));
          }
          break;
        case "summary":
        case "histogram":
          summary.Samples.push(...observed(name, got, family));
          break;
      }
    }
    const order = (a: { Name: string; Labels: Labels }, b: { Name: string; Labels: Labels }) => {
      const x = `${a.Name};${labelKey(a.Labels)}`;
      const y = `${b.Name};${labelKey(b.Labels)}`;
      return x < y ? -1 : x > y ? 1 : 0;
    };
    summary.Gauges.sort(order);
    summary.Counters.sort(order);
    summary.Samples.sort(order);
    return summary;
  }

  /** `labels`: the label names, or a label set of the first series (its names are read only then). */
  private family(name: string, kind: Kind, labels: readonly string[] | Labels, help?: string): Family {
    const existing = this.families.get(name);
    if (existing) {
      if (existing.kind !== kind) throw new Error(`metric ${name} is a ${existing.kind}, not a ${kind}`);
      return existing;
    }
    const labelNames = Array.isArray(labels) ? (labels as readonly string[]) : Object.keys(labels);
    const config = {
      name: promName(name),
      help: help ?? name,
      labelNames: [...labelNames],
      registers: [this.registry],
    };
    const family: Family = {
      name,
      kind,
      labelNames,
      aggregates: new Map(),
      readers: new Map(),
      lastKey: "",
      metric:
        kind === "counter"
          ? new Counter({
              ...config,
              // Set from the series when scraped: the same values, series and
              // order as incrementing it on each call gave (the sums are
              // added in the same order).
              collect(this: Counter) {
                this.reset();
                for (const a of family.aggregates.values()) this.inc(a.labels, a.sum);
              },
            })
          : kind === "sample"
            ? summary(config.name, config.help, this.registry)
            : new Gauge({
                ...config,
                // `this` is the gauge being scraped; the family is in scope.
                collect(this: Gauge) {
                  this.reset();
                  let set = false;
                  for (const { labels, read } of family.readers.values()) {
                    try {
                      this.set(labels, read());
                      set = true;
                    } catch {
                      // A reader that cannot answer now (a part shutting down) is left out.
                    }
                  }
                  for (const [labels, value] of family.readAll?.() ?? []) {
                    this.set(labels, value);
                    set = true;
                  }
                  // reset() leaves a 0 for a gauge without labels; nothing read, no series.
                  if (!set && labelNames.length === 0) this.remove();
                },
              }),
    };
    this.families.set(name, family);
    this.byPromName.set(config.name, family);
    return family;
  }
}

/** go-metrics' Timestamp: the interval's start, rounded to the second, as Go prints a UTC time. */
function goIntervalTime(now: Date): string {
  const start = Math.floor(now.getTime() / (INTERVAL_SECONDS * 1000)) * INTERVAL_SECONDS * 1000;
  const iso = new Date(start).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} +0000 UTC`;
}

function labelsOf(v: MetricValue<string>): Labels {
  const out: Record<string, string> = {};
  for (const [k, value] of Object.entries(v.labels))
    if (k !== "quantile" && k !== "le") out[k] = String(value);
  return out;
}

/** A summary's or histogram's series as go-metrics samples, one per label set. */
function observed(
  name: string,
  got: MetricObjectWithValues<MetricValue<string>>,
  family: Family | undefined,
): SampledValue[] {
  const series = new Map<string, { labels: Labels; sum: number; count: number }>();
  for (const v of got.values) {
    const suffix = (v as { metricName?: string }).metricName?.slice(got.name.length);
    if (suffix !== "_sum" && suffix !== "_count") continue;
    const labels = labelsOf(v);
    const key = labelKey(labels);
    const s = series.get(key) ?? { labels, sum: 0, count: 0 };
    if (suffix === "_sum") s.sum = v.value;
    else s.count = v.value;
    series.set(key, s);
  }
  return [...series.entries()].map(([key, s]) => {
    const agg = family?.aggregates.get(key) ?? {
      labels: s.labels,
      count: s.count,
      sum: s.sum,
      min: 0,
      max: 0,
      mean: s.count > 0 ? s.sum / s.count : 0,
      m2: 0,
    };
    return sampled(name, agg, s.labels);
  });
}

function single(value: number): Aggregate {
  return { labels: NO_LABELS, count: 1, sum: value, min: value, max: value, mean: value, m2: 0 };
}

function sampled(name: string, a: Aggregate, labels: Labels): SampledValue {
  return {
    Name: name,
    Count: a.count,
    Rate: a.sum / INTERVAL_SECONDS,
    Sum: a.sum,
    Min: a.min,
    Max: a.max,
    Mean: a.mean,
    Stddev: a.count > 1 ? Math.sqrt(a.m2 / (a.count - 1)) : 0,
    Labels: labels,
  };
}

function summary(name: string, help: string, registry: Registry): WindowedSummary {
  const metric = new WindowedSummary(name, help, SUMMARY_PERCENTILES, SUMMARY_GENERATION_MS);
  // The registry reads any metric through get(); its typings name its own classes only.
  registry.registerMetric(metric as unknown as Metric);
  return metric;
}

/** What prom-client refused on each call before: a label the metric was not made with. */
function checkLabels(f: Family, labels: Labels): void {
  for (const name of Object.keys(labels)) {
    if (!f.labelNames.includes(name)) {
      throw new Error(
        `metric ${f.name}: label ${name} is not one of its labels (${f.labelNames.join(", ")})`,
      );
    }
  }
}

function add(a: Aggregate, v: number): void {
  if (a.count === 0) {
    a.min = v;
    a.max = v;
  }
  a.count++;
  a.sum += v;
  if (v < a.min) a.min = v;
  if (v > a.max) a.max = v;
  const d = v - a.mean;
  a.mean += d / a.count;
  a.m2 += d * (v - a.mean);
}
