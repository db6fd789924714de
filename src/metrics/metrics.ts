type Labels = Readonly<Record<string, string>>;

interface Aggregate {
  count: number;
  sum: number;
  min: number;
  max: number;
  /** Running mean and squared deviation (Welford), so no samples are kept. */
  mean: number;
  m2: number;
}

interface Series<T> {
  readonly name: string;
  readonly labels: Labels;
  readonly value: T;
}

const seriesKey = (name: string, labels: Labels) =>
  `${name}\u0000${Object.entries(labels)
    .sort()
    .map(([k, v]) => `${k}=${v}`)
    .join(",")}`;

/**
 * Counters, gauges and timing samples, served by `/v1/metrics` in Nomad's
 * JSON shape or as Prometheus text. Gauges are read when scraped, so they
 * cost nothing in between.
 */
export class Metrics {
  private readonly counters = new Map<string, Series<Aggregate>>();
  private readonly samples = new Map<string, Series<Aggregate>>();
  private readonly gauges = new Map<string, Series<() => number>>();

  incr(name: string, by = 1, labels: Labels = {}): void {
    record(this.counters, name, labels, by);
  }

  /** Records a duration in milliseconds (or any measured value). */
  sample(name: string, value: number, labels: Labels = {}): void {
    record(this.samples, name, labels, value);
  }

  gauge(name: string, read: () => number, labels: Labels = {}): void {
    this.gauges.set(seriesKey(name, labels), { name, labels, value: read });
  }

  /** The shape of Nomad's `GET /v1/metrics` (go-metrics' in-memory sink). */
  toJSON(now: Date): unknown {
    const agg = (s: Series<Aggregate>) => ({
      Name: s.name,
      Count: s.value.count,
      Rate: s.value.sum / 10,
      Sum: s.value.sum,
      Min: s.value.min,
      Max: s.value.max,
      Mean: s.value.mean,
      Stddev: s.value.count > 1 ? Math.sqrt(s.value.m2 / (s.value.count - 1)) : 0,
      Labels: s.labels,
    });
    return {
      Timestamp: now.toISOString(),
      Gauges: [...this.gauges.values()].map((g) => ({ Name: g.name, Value: g.value(), Labels: g.labels })),
      Points: [],
      Counters: [...this.counters.values()].map(agg),
      Samples: [...this.samples.values()].map(agg),
    };
  }

  /** Prometheus text exposition format 0.0.4. */
  toPrometheus(): string {
    const lines: string[] = [];
    const name = (n: string) => n.replace(/[^a-zA-Z0-9_:]/g, "_");
    const labels = (l: Labels) => {
      const e = Object.entries(l);
      if (e.length === 0) return "";
      return `{${e.map(([k, v]) => `${name(k)}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`).join(",")}}`;
    };
    const typed = new Set<string>();
    const head = (n: string, type: string) => {
      if (!typed.has(n)) lines.push(`# TYPE ${n} ${type}`);
      typed.add(n);
    };
    for (const g of this.gauges.values()) {
      head(name(g.name), "gauge");
      lines.push(`${name(g.name)}${labels(g.labels)} ${g.value()}`);
    }
    for (const c of this.counters.values()) {
      head(name(c.name), "counter");
      lines.push(`${name(c.name)}${labels(c.labels)} ${c.value.sum}`);
    }
    for (const s of this.samples.values()) {
      const n = name(s.name);
      head(n, "summary");
      lines.push(
        `${n}_sum${labels(s.labels)} ${s.value.sum}`,
        `${n}_count${labels(s.labels)} ${s.value.count}`,
      );
    }
    return `${lines.join("\n")}\n`;
  }
}

function record(map: Map<string, Series<Aggregate>>, name: string, labels: Labels, v: number): void {
  const key = seriesKey(name, labels);
  let s = map.get(key);
  if (!s) {
    s = { name, labels, value: { count: 0, sum: 0, min: v, max: v, mean: 0, m2: 0 } };
    map.set(key, s);
  }
  const a = s.value;
  a.count++;
  a.sum += v;
  if (v < a.min) a.min = v;
  if (v > a.max) a.max = v;
  const d = v - a.mean;
  a.mean += d / a.count;
  a.m2 += d * (v - a.mean);
}
