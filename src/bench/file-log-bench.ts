import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { type FileLog, openFileLog } from "../log/file/index.ts";

// A type alias, not an interface, so it stays assignable to Record<string, number>.
export type FileLogBenchResult = {
  /** Events/s appending 1,000-event batches back to back. */
  readonly batch_appends_per_s: number;
  /** Events/s from 256 concurrent single-event appenders (group commit at work). */
  readonly single_appends_per_s: number;
  /** Latency of a lone appender, one single-event append at a time. */
  readonly append_p50_ms: number;
  readonly append_p99_ms: number;
};

const RECORD_BYTES = 200;
const BATCH = 1000;
const PHASE_MS = 2000;
const CONCURRENCY = 256;
const LONE_APPENDS = 3000;

/**
 * Measures the file log with fsync "always" (every resolved append is on
 * disk). Each phase gets a fresh log in a subdirectory of `dir`, removed
 * afterwards.
 */
export async function benchFileLog(dir: string): Promise<FileLogBenchResult> {
  const records = distinctRecords(4096);
  // Latency first: the bulk phases leave hundreds of MB of writeback and
  // discards behind them, which would be measured as the lone appender's.
  const lone = await phase(dir, "lone", (log) => loneLatencies(log, records));
  const batch_appends_per_s = await phase(dir, "batch", (log) => batches(log, records));
  const single_appends_per_s = await phase(dir, "single", (log) => concurrentSingles(log, records));
  return {
    batch_appends_per_s,
    single_appends_per_s,
    append_p50_ms: percentile(lone, 0.5),
    append_p99_ms: percentile(lone, 0.99),
  };
}

async function phase<T>(root: string, name: string, run: (log: FileLog) => Promise<T>): Promise<T> {
  const dir = join(root, `file-log-bench-${name}`);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const log = await openFileLog(dir, { fsync: "always" });
  try {
    return await run(log);
  } finally {
    await log.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Distinct payloads so nothing benefits from appending the same bytes over and over. */
function distinctRecords(count: number): Uint8Array[] {
  return Array.from({ length: count }, (_, i) => {
    const r = new Uint8Array(RECORD_BYTES);
    for (let k = 0; k < RECORD_BYTES; k++) r[k] = (i * 131 + k * 17) & 0xff;
    return r;
  });
}

async function batches(log: FileLog, records: Uint8Array[]): Promise<number> {
  const batchesOf = Array.from({ length: 4 }, (_, b) => records.slice(b * BATCH, (b + 1) * BATCH));
  let events = 0;
  const start = performance.now();
  for (let i = 0; performance.now() - start < PHASE_MS; i++) {
    const r = await log.append(batchesOf[i % batchesOf.length]!);
    events += r.last - r.first + 1;
  }
  return events / ((performance.now() - start) / 1000);
}

async function concurrentSingles(log: FileLog, records: Uint8Array[]): Promise<number> {
  let events = 0;
  const start = performance.now();
  const appender = async (w: number) => {
    for (let i = w; performance.now() - start < PHASE_MS; i += CONCURRENCY) {
      await log.append([records[i % records.length]!]);
      events++;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => appender(w)));
  return events / ((performance.now() - start) / 1000);
}

async function loneLatencies(log: FileLog, records: Uint8Array[]): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < LONE_APPENDS; i++) {
    const t = performance.now();
    await log.append([records[i % records.length]!]);
    latencies.push(performance.now() - t);
  }
  return latencies;
}

function percentile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
}
