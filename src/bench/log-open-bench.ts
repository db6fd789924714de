import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openFileLog } from "../log/file/index.ts";
import { inFreshProcess } from "./fresh-process.ts";

/** Open time of one log size; a type alias so it stays assignable to Record<string, number>. */
export type LogOpenFigures = {
  /** openFileLog() until it resolves, in a fresh process. */
  readonly open_ms: number;
  /** open, then read the records after a snapshot taken SNAPSHOT_BEHIND records before the end: what a restart with a recent snapshot costs the log. */
  readonly open_and_tail_ms: number;
};

const RECORD_BYTES = 1024;
const BATCH = 1024;
/** Records after the snapshot: about 10 MB, a few minutes of a busy cluster. */
const SNAPSHOT_BEHIND = 10_000;
export const DEFAULT_LOG_OPEN_SIZES_MB = [100, 1024, 5120] as const;

/**
 * Grows one file log to each size in turn (MB, ascending) and measures its
 * open in a fresh process each time. The log was just written, so as much
 * of it as the page cache holds is read from memory; what it does not hold
 * is read from the disk, which is part of what an open that reads the whole
 * log costs. The log is removed afterwards.
 */
export async function benchLogOpen(
  sizesMb: readonly number[],
  progress: (what: string) => void,
): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-open-"));
  const figures: Record<string, number> = {};
  try {
    for (const mb of [...sizesMb].sort((a, b) => a - b)) {
      progress(`log open: growing the log to ${mb} MB`);
      await growTo(dir, mb * 1024 * 1024);
      progress(`log open: opening ${mb} MB (median of three, each in a fresh process)`);
      const runs: LogOpenFigures[] = [];
      for (let i = 0; i < 3; i++) {
        runs.push(
          await inFreshProcess<LogOpenFigures>({
            module: "./log-open-bench.ts",
            exported: "measureLogOpen",
            args: [dir],
            label: "log open",
          }),
        );
      }
      figures[`${mb}MB_open_ms`] = median(runs.map((r) => r.open_ms));
      figures[`${mb}MB_open_and_tail_ms`] = median(runs.map((r) => r.open_and_tail_ms));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return figures;
}

/** Appends 1 KiB records (fsync "never": this is set-up, not what is measured) until the log holds `bytes`. */
async function growTo(dir: string, bytes: number): Promise<void> {
  const log = await openFileLog(dir, { fsync: "never" });
  try {
    const batch = Array.from({ length: BATCH }, () => new Uint8Array(RECORD_BYTES));
    for (let n = log.lastIndex(); n * RECORD_BYTES < bytes; n += BATCH) {
      // Distinct payloads, so nothing is helped by identical bytes.
      for (const [k, r] of batch.entries()) r.fill((n + k) & 0xff, 0, 8);
      await log.append(batch);
    }
  } finally {
    await log.close();
  }
}

/** Run in a fresh process by benchLogOpen. */
export async function measureLogOpen(dir: string): Promise<LogOpenFigures> {
  const start = performance.now();
  const log = await openFileLog(dir, { fsync: "never" });
  const open_ms = performance.now() - start;
  try {
    let records = 0;
    for await (const batch of log.read(Math.max(1, log.lastIndex() - SNAPSHOT_BEHIND + 1)))
      records += batch.length;
    if (records === 0) throw new Error("the log read nothing after the snapshot");
    return { open_ms, open_and_tail_ms: performance.now() - start };
  } finally {
    await log.close();
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}
