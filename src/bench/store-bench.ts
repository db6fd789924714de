import { mkdtemp, open, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { createProjections } from "../../projections/index.ts";
import { allSchemas } from "../../streams/index.ts";
import { EnvelopeCodec } from "../codec/envelope-codec.ts";
import { openFileLog } from "../log/file/index.ts";
import { Store } from "../store/store.ts";
import { mixedHistory } from "./mixed-history.ts";
import { percentile } from "./percentile.ts";

const quiet = pino({ level: "silent" });
const codec = new EnvelopeCodec(allSchemas);

/**
 * Replay rate: records decoded and applied through every projection per
 * second, reading a file log from disk as a restarting server does. The log
 * is written without fsync, then synced once, so that the reads do not race
 * the kernel writing those pages back; the median of three replays is given.
 */
export async function benchReplay(
  records = 1_000_000,
  runs = 3,
): Promise<{ records_per_s: number; records: number }> {
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-replay-"));
  try {
    const log = await openFileLog(dir, { fsync: "never" });
    let batch: Uint8Array[] = [];
    for (const e of mixedHistory(records, 7)) {
      batch.push(codec.encode(e));
      if (batch.length === 5000) {
        await log.append(batch);
        batch = [];
      }
    }
    if (batch.length) await log.append(batch);
    await log.close();
    await syncFiles(dir);

    const rates: number[] = [];
    for (let run = 0; run < runs; run++) {
      const reopened = await openFileLog(dir, { fsync: "never" });
      const store = new Store({ log: reopened, codec, projections: createProjections().all, logger: quiet });
      const started = performance.now();
      await store.start();
      const seconds = (performance.now() - started) / 1000;
      await store.stop();
      await reopened.close();
      rates.push(records / seconds);
    }
    return { records_per_s: Math.round(percentile(rates, 0.5)), records };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function syncFiles(dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    const fh = await open(join(dir, name), "r");
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  }
}

/**
 * Append resolved -> change visible in a projection, for a lone writer on
 * the durable file log: the read-your-writes delay a handler adds.
 */
export async function benchVisible(
  samples = 3000,
): Promise<{ visible_p50_ms: number; visible_p99_ms: number }> {
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-visible-"));
  try {
    const log = await openFileLog(dir, { fsync: "always" });
    const store = new Store({ log, codec, projections: createProjections().all, logger: quiet });
    await store.start();
    const history = mixedHistory(samples + 1, 11);
    const delays: number[] = [];
    for (const e of history) {
      const { last } = await store.append([e]);
      const resolved = performance.now();
      await store.waitFor(last);
      delays.push(performance.now() - resolved);
    }
    await store.stop();
    await log.close();
    return { visible_p50_ms: percentile(delays, 0.5), visible_p99_ms: percentile(delays, 0.99) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
