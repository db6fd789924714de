import { percentile } from "../bench/percentile.ts";

/** Latency samples kept per method: enough for a stable p99, bounded in memory. */
const RESERVOIR = 20_000;

class MethodStats {
  calls = 0;
  errors = 0;
  /** Request and response body bytes (headers not counted). */
  bytesOut = 0;
  bytesIn = 0;
  private seen = 0;
  private readonly samples: number[] = [];
  /** Reservoir replacement draws; a fixed LCG keeps it off the simulation's own streams. */
  private lcg = 12345;

  sample(ms: number): void {
    this.seen++;
    if (this.samples.length < RESERVOIR) {
      this.samples.push(ms);
      return;
    }
    this.lcg = (Math.imul(this.lcg, 1103515245) + 12345) >>> 0;
    const slot = this.lcg % this.seen;
    if (slot < RESERVOIR) this.samples[slot] = ms;
  }

  latency(): { p50_ms: number; p99_ms: number; max_ms: number } {
    return {
      p50_ms: percentile(this.samples, 0.5),
      p99_ms: percentile(this.samples, 0.99),
      max_ms: this.samples.length ? Math.round(Math.max(...this.samples) * 1000) / 1000 : 0,
    };
  }
}

export interface MethodFigures {
  readonly calls: number;
  readonly errors: number;
  readonly bytes_out: number;
  readonly bytes_in: number;
  readonly p50_ms: number;
  readonly p99_ms: number;
  readonly max_ms: number;
}

export interface SimCounters {
  readonly rpc: Readonly<Record<string, MethodFigures>>;
  /** Node.UpdateStatus round trips. */
  readonly heartbeat: { readonly p50_ms: number; readonly p99_ms: number; readonly count: number };
  /** Allocation entries carried by Node.UpdateAlloc calls the server accepted. */
  readonly alloc_updates_sent: number;
  /** Node.UpdateAlloc calls the server accepted. */
  readonly update_alloc_calls: number;
  readonly bytes_out: number;
  readonly bytes_in: number;
  /** Errors by HTTP status (0: transport error), all methods. */
  readonly errors_by_status: Readonly<Record<string, number>>;
  /** Errors by method and reason (HTTP status, or the transport error's code). */
  readonly errors_by_reason: Readonly<Record<string, number>>;
}

/** Where an RpcClient counts each call it made. */
export interface CallCounter {
  call(method: string, ms: number, bytesOut: number, bytesIn: number, status: number, reason?: string): void;
}

/** What the simulator counts as it runs; read with `snapshot()`. */
export class Counters implements CallCounter {
  private readonly methods = new Map<string, MethodStats>();
  private readonly statuses = new Map<number, number>();
  private readonly reasons = new Map<string, number>();
  allocUpdatesSent = 0;
  updateAllocCalls = 0;
  /** Heartbeat round trips since beginWindow(), every one of them (a burst is short). */
  private window: number[] | undefined;

  /** Starts keeping every heartbeat round trip, for a phase's own percentiles (the placement burst). */
  beginWindow(): void {
    this.window = [];
  }

  /** Heartbeat round trips since beginWindow(); stops keeping them. */
  endWindow(): { p50_ms: number; p99_ms: number; max_ms: number; count: number } {
    const w = this.window ?? [];
    this.window = undefined;
    return {
      p50_ms: percentile(w, 0.5),
      p99_ms: percentile(w, 0.99),
      max_ms: w.reduce((m, x) => Math.max(m, Math.round(x * 1000) / 1000), 0),
      count: w.length,
    };
  }

  private stats(method: string): MethodStats {
    let s = this.methods.get(method);
    if (!s) {
      s = new MethodStats();
      this.methods.set(method, s);
    }
    return s;
  }

  call(method: string, ms: number, bytesOut: number, bytesIn: number, status: number, reason = ""): void {
    const s = this.stats(method);
    s.calls++;
    s.bytesOut += bytesOut;
    s.bytesIn += bytesIn;
    s.sample(ms);
    if (method === "Node.UpdateStatus") this.window?.push(ms);
    if (status < 200 || status >= 300) {
      s.errors++;
      this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
      const key = `${method} ${status === 0 ? reason || "transport" : status}`;
      this.reasons.set(key, (this.reasons.get(key) ?? 0) + 1);
    }
  }

  snapshot(): SimCounters {
    const rpc: Record<string, MethodFigures> = {};
    let bytesOut = 0;
    let bytesIn = 0;
    for (const [name, s] of [...this.methods].sort(([a], [b]) => a.localeCompare(b))) {
      rpc[name] = {
        calls: s.calls,
        errors: s.errors,
        bytes_out: s.bytesOut,
        bytes_in: s.bytesIn,
        ...s.latency(),
      };
      bytesOut += s.bytesOut;
      bytesIn += s.bytesIn;
    }
    const hb = rpc["Node.UpdateStatus"];
    return {
      rpc,
      heartbeat: { p50_ms: hb?.p50_ms ?? 0, p99_ms: hb?.p99_ms ?? 0, count: hb?.calls ?? 0 },
      alloc_updates_sent: this.allocUpdatesSent,
      update_alloc_calls: this.updateAllocCalls,
      bytes_out: bytesOut,
      bytes_in: bytesIn,
      errors_by_status: Object.fromEntries([...this.statuses].map(([k, v]) => [String(k), v])),
      errors_by_reason: Object.fromEntries(this.reasons),
    };
  }
}
