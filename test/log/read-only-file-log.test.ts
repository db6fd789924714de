import { appendFile, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { filter, firstValueFrom, type Observable } from "rxjs";
import { afterAll, describe, expect, it } from "vitest";
import { LogError, type LogRecord } from "../../src/log/event-log.ts";
import { segmentFileName } from "../../src/log/file/format.ts";
import { openFileLog, openFileLogReadOnly } from "../../src/log/file/index.ts";
import { lockHolder } from "../../src/log/file/process-lock.ts";
import { hashDir, segmentNames } from "./segment-bytes.ts";
import { tempDirs } from "./temp-dirs.ts";

const dirs = tempDirs("read-only-file-log");
afterAll(() => dirs.cleanup());

const record = (i: number) => Buffer.from(`record-${i}`);
const records = (from: number, to: number) => {
  const out: Buffer[] = [];
  for (let i = from; i <= to; i++) out.push(record(i));
  return out;
};

async function readAll(log: { read(from: number): AsyncIterable<LogRecord[]> }): Promise<string[]> {
  const out: string[] = [];
  for await (const batch of log.read(1)) for (const r of batch) out.push(Buffer.from(r.bytes).toString());
  return out;
}

/** Collects a tail's records until it has seen `index`. */
async function tailUntil(tail: Observable<LogRecord[]>, index: number): Promise<string[]> {
  const seen: string[] = [];
  await firstValueFrom(
    tail.pipe(
      filter((batch) => {
        for (const r of batch) seen.push(Buffer.from(r.bytes).toString());
        return batch[batch.length - 1]!.index >= index;
      }),
    ),
  );
  return seen;
}

describe("file log opened read-only", () => {
  it("reads a log another writer holds, without taking its lock or changing a byte, and refuses appends", async () => {
    const dir = await dirs.make();
    const writer = await openFileLog(dir, { fsync: "never" });
    await writer.append(records(1, 50));
    const lockBefore = await lockHolder(dir);
    const before = await hashDir(dir);

    const reader = await openFileLogReadOnly(dir);
    expect(reader.lastIndex()).toBe(50);
    expect(await readAll(reader)).toEqual(records(1, 50).map(String));
    const refused = await reader.append([record(51)]).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(LogError);
    expect((refused as LogError).message).toMatch(/read-only/);
    await reader.close();

    expect(await lockHolder(dir)).toBe(lockBefore);
    expect(await hashDir(dir)).toEqual(before);
    expect(writer.lastIndex()).toBe(50);
    await writer.close();
  });

  it("ends at a torn tail (a write cut short or still under way) and leaves it where it is", async () => {
    const dir = await dirs.make();
    const writer = await openFileLog(dir, { fsync: "never" });
    await writer.append(records(1, 10));
    await writer.close();
    const [segment] = await segmentNames(dir);
    // Half a frame: a length that runs past the end and a few payload bytes.
    const torn = Buffer.alloc(12);
    torn.writeUInt32LE(1000, 0);
    await appendFile(join(dir, segment!), torn);
    const before = await hashDir(dir);

    const reader = await openFileLogReadOnly(dir);
    expect(reader.lastIndex()).toBe(10);
    expect(await readAll(reader)).toEqual(records(1, 10).map(String));
    await reader.close();
    expect(await hashDir(dir)).toEqual(before);
  });

  it("leaves out a next segment whose header a writer has not written yet", async () => {
    const dir = await dirs.make();
    const writer = await openFileLog(dir, { fsync: "never" });
    await writer.append(records(1, 10));
    await writer.close();
    await writeFile(join(dir, segmentFileName(11)), Buffer.alloc(0));
    const before = await hashDir(dir);

    const reader = await openFileLogReadOnly(dir);
    expect(reader.lastIndex()).toBe(10);
    expect(await readAll(reader)).toEqual(records(1, 10).map(String));
    await reader.close();
    expect(await hashDir(dir)).toEqual(before);
  });

  it("refuses a directory that does not exist, or holds no segments, creating nothing", async () => {
    const base = await dirs.make();
    const missing = join(base, "typo");
    const err = await openFileLogReadOnly(missing).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LogError);
    expect((err as LogError).message).toMatch(/does not exist/);
    expect((err as LogError).message).toContain(missing);
    await expect(hashDir(missing)).rejects.toThrow(/ENOENT/);

    const empty = join(base, "empty");
    await mkdir(empty);
    await expect(openFileLogReadOnly(empty)).rejects.toThrow(/holds no segment files/);
    expect(await hashDir(empty)).toEqual({});
  });

  it("follows what a writer appends, into new segments too, when tailed", async () => {
    const dir = await dirs.make();
    // Small segments, so the writer rolls over to new files while the reader follows.
    const writer = await openFileLog(dir, { fsync: "never", segmentBytes: 2048 });
    await writer.append(records(1, 20));
    const reader = await openFileLogReadOnly(dir);
    try {
      const followed = tailUntil(reader.tail(5), 400);
      for (let i = 21; i <= 400; i += 20) await writer.append(records(i, i + 19));
      expect((await segmentNames(dir)).length).toBeGreaterThan(2);
      expect(await followed).toEqual(records(5, 400).map(String));
      expect(reader.lastIndex()).toBe(400);
      expect(await readAll(reader)).toEqual(records(1, 400).map(String));
    } finally {
      await reader.close();
      await writer.close();
    }
  });
});
