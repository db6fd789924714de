import { copyFile, open, readdir, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import type { LogRecord } from "../../src/log/event-log.ts";
import {
  type FileLogOptions,
  openFileLog,
  openFileLogReadOnly,
  repairFileLog,
  verifyFileLog,
} from "../../src/log/file/index.ts";
import { frameOffsets, hashDir, segmentNames } from "./segment-bytes.ts";
import { tempDirs } from "./temp-dirs.ts";

const dirs = tempDirs("file-log-index-files");
afterAll(() => dirs.cleanup());

const enc = new TextEncoder();
const dec = new TextDecoder();
/** `mark` changes a record's bytes but not its length, so two logs differing only by it have the same layout. */
const record = (i: number, mark = "-") => enc.encode(`event ${i} ${mark}${"-".repeat(60 + (i % 40))}`);
const expected = (count: number) => Array.from({ length: count }, (_, i) => dec.decode(record(i + 1)));

/** A closed log of `count` records over many 4 KiB segments. */
async function makeLog(count: number, mark = "-"): Promise<string> {
  const dir = await dirs.make();
  const log = await openFileLog(dir, { segmentBytes: 4096 });
  for (let i = 1; i <= count; i += 5) await log.append([1, 2, 3, 4, 5].map((k) => record(i + k - 1, mark)));
  await log.close();
  return dir;
}

const indexName = (segment: string) => segment.replace(/\.seg$/, ".idx");
const indexNames = async (dir: string) => (await readdir(dir)).filter((n) => n.endsWith(".idx")).sort();

/** A real pino logger whose JSON lines are kept for the test to read. */
function capturedPino() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "warn" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}

async function readAll(log: { read(from: number): AsyncIterable<LogRecord[]> }, from = 1): Promise<string[]> {
  const out: string[] = [];
  for await (const batch of log.read(from)) for (const r of batch) out.push(dec.decode(r.bytes));
  return out;
}

/** Opens, reads everything, closes; returns the warnings pino got. */
async function openAndReadAll(dir: string, count: number, options: FileLogOptions = {}) {
  const { logger, lines } = capturedPino();
  const log = await openFileLog(dir, { ...options, logger });
  try {
    expect(log.lastIndex()).toBe(count);
    expect(await readAll(log)).toEqual(expected(count));
  } finally {
    await log.close();
  }
  return lines;
}

describe("file log index files", () => {
  it("writes an index file for every segment it seals, and none for the one it appends to", async () => {
    const dir = await makeLog(300);
    const segments = await segmentNames(dir);
    expect(segments.length).toBeGreaterThan(4);
    expect(await indexNames(dir)).toEqual(segments.slice(0, -1).map(indexName));
    // Appending after a reopen seals the old active segment: it gets its index file then.
    const log = await openFileLog(dir, { segmentBytes: 4096 });
    for (let i = 301; i <= 400; i += 5) await log.append([1, 2, 3, 4, 5].map((k) => record(i + k - 1)));
    await log.close();
    const after = await segmentNames(dir);
    expect(await indexNames(dir)).toEqual(after.slice(0, -1).map(indexName));
    expect(await openAndReadAll(dir, 400)).toEqual([]);
  });

  it("opens without reading the records of sealed segments; a read that reaches damage there still reports it", async () => {
    const dir = await makeLog(300);
    const segments = await segmentNames(dir);
    const name = segments[2]!;
    const path = join(dir, name);
    const bytes = await readFile(path);
    const offsets = frameOffsets(bytes);
    const first = Number(name.slice(0, 20));
    // Garbage over every frame but the first and the last: frame lengths no
    // longer tile the file, which any read of the segment's body would see.
    const from = offsets[1]!;
    const to = offsets[offsets.length - 1]!;
    const fh = await open(path, "r+");
    await fh.write(Buffer.alloc(to - from, 0xff), 0, to - from, from);
    await fh.close();

    const { logger, lines } = capturedPino();
    const log = await openFileLog(dir, { logger });
    try {
      expect(lines).toEqual([]);
      expect(log.lastIndex()).toBe(300);
      // Records before and after the damaged segment read fine; the damaged ones do not.
      const lastSeg = Number(segments.at(-1)!.slice(0, 20));
      expect(await readAll(log, lastSeg)).toEqual(expected(300).slice(lastSeg - 1));
      await expect(readAll(log, first + 1)).rejects.toThrow(`${path} at byte offset ${from}`);
      expect(await log.append([record(301)])).toEqual({ first: 301, last: 301 });
    } finally {
      await log.close();
    }
    // verify reads every record; a full open does too.
    const report = await verifyFileLog(dir);
    expect(report.problem).toMatchObject({ kind: "corrupt", file: path, offset: from });
    await expect(openFileLog(dir, { verifyOnOpen: "full" })).rejects.toMatchObject({ code: "corrupt" });
  });

  it("rebuilds a damaged, truncated, foreign or stale index file from its segment, with a warning naming it", async () => {
    const other = await makeLog(300, "x");
    const cases: Record<string, (dir: string, segments: string[]) => Promise<RegExp>> = {
      "a flipped byte": async (dir, segments) => {
        const p = join(dir, indexName(segments[1]!));
        const b = await readFile(p);
        b[20] = b[20]! ^ 0x40;
        await writeFile(p, b);
        return /checksum mismatch/;
      },
      "cut short": async (dir, segments) => {
        await truncate(join(dir, indexName(segments[1]!)), 30);
        return /too short/;
      },
      "another segment's": async (dir, segments) => {
        await copyFile(join(dir, indexName(segments[0]!)), join(dir, indexName(segments[1]!)));
        return /for a segment starting at/;
      },
      "from a log that differs": async (dir, segments) => {
        await copyFile(join(other, indexName(segments[1]!)), join(dir, indexName(segments[1]!)));
        return /last record is not the one the index describes/;
      },
    };
    for (const [what, damage] of Object.entries(cases)) {
      const dir = await makeLog(300);
      const segments = await segmentNames(dir);
      const why = await damage(dir, segments);
      // verify names the index file's problem, and it is not damage to the log.
      const verified = await verifyFileLog(dir);
      expect(verified.healthy, what).toBe(true);
      expect(
        verified.segments.map((v) => v.indexFileProblem !== undefined),
        what,
      ).toEqual(segments.map((_, i) => i === 1));
      expect(verified.segments[1]!.indexFileProblem, what).toMatch(why);
      const warnings = await openAndReadAll(dir, 300);
      expect(warnings, what).toHaveLength(1);
      expect(warnings[0], what).toMatchObject({
        level: 40,
        file: join(dir, indexName(segments[1]!)),
        rebuilt: "rewritten",
      });
      expect(String(warnings[0]!.reason), what).toMatch(why);
      // Rewritten: the next open has nothing to warn about.
      expect(await openAndReadAll(dir, 300), what).toEqual([]);
    }
  });

  it("still refuses to open when rebuilding an index reads a damaged record", async () => {
    const dir = await makeLog(300);
    const segments = await segmentNames(dir);
    const path = join(dir, segments[1]!);
    const offsets = frameOffsets(await readFile(path));
    await rm(join(dir, indexName(segments[1]!)));
    const fh = await open(path, "r+");
    await fh.write(Buffer.from([0x00, 0x11, 0x22]), 0, 3, offsets[2]! + 10);
    await fh.close();
    const before = await hashDir(dir);
    const err = await openFileLog(dir).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "corrupt" });
    expect((err as Error).message).toContain(`${path} at byte offset ${offsets[2]}`);
    expect(await hashDir(dir)).toEqual(before);
  });

  it("opens a log written before index files, with one warning, and writes them", async () => {
    const dir = await makeLog(300);
    const segments = await segmentNames(dir);
    for (const n of await indexNames(dir)) await rm(join(dir, n));
    const warnings = await openAndReadAll(dir, 300);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      reason: "missing",
      files: segments.slice(0, -1).map((n) => join(dir, indexName(n))),
    });
    expect(await indexNames(dir)).toEqual(segments.slice(0, -1).map(indexName));
    expect(await openAndReadAll(dir, 300)).toEqual([]);
  });

  it("opens after a crash in the middle of writing an index file", async () => {
    const dir = await makeLog(300);
    const segments = await segmentNames(dir);
    // The crash hit while the last sealed segment's index was being written:
    // a partial temporary file is left, and (fsync "never" and a power loss)
    // the index under its final name lost its last bytes.
    const sealed = indexName(segments.at(-2)!);
    const full = await readFile(join(dir, sealed));
    await writeFile(join(dir, `${sealed}.tmp`), full.subarray(0, 40));
    await writeFile(join(dir, sealed), full.subarray(0, full.length - 9));
    const warnings = await openAndReadAll(dir, 300);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ file: join(dir, sealed) });
    expect((await readdir(dir)).filter((n) => n.endsWith(".tmp"))).toEqual([]);
    expect(await openAndReadAll(dir, 300)).toEqual([]);
  });

  it("drops the index file of a segment that becomes the one appended to", async () => {
    const dir = await makeLog(300);
    const segments = await segmentNames(dir);
    const keep = Number(segments.at(-3)!.slice(0, 20)) + 2;
    const report = await repairFileLog(dir, keep);
    expect(report.lastIndex).toBe(keep);
    // Removed segments took their index files with them; the kept last one lost its own.
    expect(await indexNames(dir)).toEqual(segments.slice(0, -3).map(indexName));
    expect(await openAndReadAll(dir, keep)).toEqual([]);
  });

  it("read-only: uses index files, rebuilds missing or damaged ones in memory, and writes nothing", async () => {
    const dir = await makeLog(300);
    const segments = await segmentNames(dir);
    await rm(join(dir, indexName(segments[0]!)));
    await truncate(join(dir, indexName(segments[1]!)), 10);
    // A sealed segment with damaged records and a sound index file: a reader that used it never reads them.
    const path = join(dir, segments[3]!);
    const offsets = frameOffsets(await readFile(path));
    const fh = await open(path, "r+");
    await fh.write(Buffer.alloc(4, 0xff), 0, 4, offsets[1]!);
    await fh.close();
    const before = await hashDir(dir);

    const { logger, lines } = capturedPino();
    const reader = await openFileLogReadOnly(dir, { logger });
    try {
      expect(reader.lastIndex()).toBe(300);
      expect(lines.map((l) => l.rebuilt)).toEqual(["in memory only", "in memory only"]);
      expect(lines.map((l) => l.files ?? l.file)).toEqual([
        [join(dir, indexName(segments[0]!))],
        join(dir, indexName(segments[1]!)),
      ]);
      const firstOfDamaged = Number(segments[3]!.slice(0, 20));
      const out: string[] = [];
      for await (const b of reader.read(1, { untilIndex: firstOfDamaged }))
        out.push(...b.map((r) => dec.decode(r.bytes)));
      expect(out).toEqual(expected(firstOfDamaged));
      await expect(readAll(reader, firstOfDamaged + 1)).rejects.toThrow(
        `${path} at byte offset ${offsets[1]}`,
      );
    } finally {
      await reader.close();
    }
    expect(await hashDir(dir)).toEqual(before);
  });
});
