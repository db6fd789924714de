import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { concatMap, firstValueFrom, take, toArray } from "rxjs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { LogRecord } from "../../src/log/event-log.ts";
import { type FileLog, type FileLogOptions, openFileLog } from "../../src/log/file/index.ts";
import { eventLogContract } from "./contract.ts";
import { tempDirs } from "./temp-dirs.ts";

const dirs = tempDirs("file-log");
afterAll(() => dirs.cleanup());

eventLogContract("file", () => {
  let dir: string | undefined;
  return {
    open: async () => {
      dir = await dirs.make();
      return openFileLog(dir);
    },
    reopen: () => openFileLog(dir!),
  };
});

eventLogContract("file (fsync never)", () => {
  let dir: string | undefined;
  return {
    open: async () => {
      dir = await dirs.make();
      return openFileLog(dir, { fsync: "never", segmentBytes: 2048 });
    },
    reopen: () => openFileLog(dir!, { fsync: "never", segmentBytes: 2048 }),
  };
});

const enc = new TextEncoder();
const dec = new TextDecoder();
const record = (i: number) => enc.encode(`record-${i}-${"x".repeat(i % 97)}`);
const text = (r: LogRecord) => dec.decode(r.bytes);

async function readAll(log: FileLog, from = 1, maxBatch = 50): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const batch of log.read(from, { maxBatch })) out.push(...batch);
  return out;
}

describe("file log segments", () => {
  const open: FileLog[] = [];
  const start = async (dir: string, options: FileLogOptions) => {
    const log = await openFileLog(dir, options);
    open.push(log);
    return log;
  };
  afterEach(async () => {
    for (const log of open.splice(0)) await log.close();
  });

  it("rolls over into many small segments and reads from every index, before and after reopening", async () => {
    const dir = await dirs.make();
    const options = { segmentBytes: 4096, indexIntervalBytes: 512 };
    const log = await start(dir, options);
    const total = 600;
    for (let i = 1; i <= total; i += 10) {
      await log.append(Array.from({ length: 10 }, (_, k) => record(i + k)));
    }
    const segments = (await readdir(dir)).filter((n) => n.endsWith(".seg")).sort();
    expect(segments.length).toBeGreaterThan(5);
    expect(segments[0]).toBe("00000000000000000001.seg");

    const check = async (l: FileLog) => {
      expect(l.lastIndex()).toBe(total);
      const expectRun = (got: LogRecord[], from: number, count: number) => {
        expect(got.length).toBe(count);
        got.forEach((r, k) => {
          expect(r.index).toBe(from + k);
          expect(text(r)).toBe(dec.decode(record(from + k)));
        });
      };
      for (let from = 1; from <= total + 1; from++) {
        // A short window from every index (crossing every segment boundary)...
        const window: LogRecord[] = [];
        for await (const b of l.read(from, { untilIndex: from + 12, maxBatch: 5 })) window.push(...b);
        expectRun(window, from, Math.min(total, from + 12) - from + 1);
        // ...and the whole rest of the log from some of them.
        if (from % 37 === 1) expectRun(await readAll(l, from, 7), from, total - from + 1);
      }
    };
    await check(log);
    await log.close();
    const again = await start(dir, options);
    await check(again);
    const more = await again.append([record(total + 1)]);
    expect(more).toEqual({ first: total + 1, last: total + 1 });
  });

  it("seeks with the sparse index instead of reading from the start of the log", async () => {
    const dir = await dirs.make();
    const reads: { file: string; offset: number; length: number }[] = [];
    const options: FileLogOptions = {
      segmentBytes: 256 * 1024,
      indexIntervalBytes: 4096,
      onSegmentRead: (file, offset, length) => reads.push({ file, offset, length }),
    };
    let log = await start(dir, options);
    const payload = new Uint8Array(200).fill(7);
    for (let i = 0; i < 50; i++) await log.append(Array.from({ length: 100 }, () => payload));
    const segments = (await readdir(dir)).filter((n) => n.endsWith(".seg")).sort();
    expect(segments.length).toBeGreaterThanOrEqual(3);

    // Before and after a reopen (where the index is rebuilt by the open scan).
    for (const round of [0, 1]) {
      if (round === 1) {
        await log.close();
        log = await start(dir, options);
      }
      const target = 3333;
      reads.length = 0;
      const got: LogRecord[] = [];
      for await (const b of log.read(target, { untilIndex: target })) got.push(...b);
      expect(got.map((r) => r.index)).toEqual([target]);
      expect(reads.length).toBeGreaterThan(0);
      expect(reads.some((r) => r.file === join(dir, segments[0]!))).toBe(false);
      // Within its segment the read starts at most one index interval before the record.
      const frame = 8 + 200;
      const firsts = segments.map((n) => Number(n.slice(0, 20)));
      const holder = firsts.findLastIndex((f) => f <= target);
      const targetOffset = 24 + (target - firsts[holder]!) * frame;
      expect(holder).toBeGreaterThan(0);
      expect(reads[0]!.file).toBe(join(dir, segments[holder]!));
      expect(reads[0]!.offset).toBeLessThanOrEqual(targetOffset);
      expect(targetOffset - reads[0]!.offset).toBeLessThan(4096 + frame);
    }
  });

  it("tails a backlog spanning segments, then live appends, in order", async () => {
    const dir = await dirs.make();
    const log = await start(dir, { segmentBytes: 4096 });
    for (let i = 1; i <= 300; i += 3) await log.append([record(i), record(i + 1), record(i + 2)]);
    const tailed = firstValueFrom(
      log.tail(5).pipe(
        concatMap((b) => b),
        take(400),
        toArray(),
      ),
    );
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let k = 0; k < 26; k++) await log.append([record(1000 + w * 100 + k)]);
    });
    await Promise.all(writers);
    const got = await tailed;
    expect(got.map((r) => r.index)).toEqual(Array.from({ length: 400 }, (_, i) => i + 5));
    const all = await readAll(log);
    expect(got.map(text)).toEqual(all.slice(4, 404).map(text));
  });

  it("rejects appends after close, and a second open of the same directory", async () => {
    const dir = await dirs.make();
    const log = await start(dir, {});
    await expect(openFileLog(dir)).rejects.toMatchObject({ code: "config" });
    const pending = log.append([record(1)]);
    await log.close();
    await expect(pending).resolves.toEqual({ first: 1, last: 1 });
    await expect(log.append([record(2)])).rejects.toMatchObject({ name: "LogError", code: "closed" });
    expect(log.url).toBe(`file:${dir}`);
  });

  it("coalesces concurrent appends into few commits and resolves each with its own range", async () => {
    const dir = await dirs.make();
    const log = await start(dir, {});
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => log.append([record(i), record(i)])),
    );
    const firsts = results.map((r) => r.first).sort((a, b) => a - b);
    expect(firsts).toEqual(Array.from({ length: 200 }, (_, i) => 1 + 2 * i));
    expect(results.every((r) => r.last === r.first + 1)).toBe(true);
    const all = await readAll(log);
    for (const [i, r] of results.entries()) expect(text(all[r.first - 1]!)).toBe(dec.decode(record(i)));
  });
});
