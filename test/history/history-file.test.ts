import { appendFileSync, readFileSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { HistoryEntry } from "../../projections/history.ts";
import { HistoryFile } from "../../src/history/history-file.ts";

function entry(index: number, field: string, to: unknown): HistoryEntry {
  return {
    Index: index,
    Time: new Date(1_763_800_000_000 + index).toISOString(),
    Field: field,
    From: null,
    To: to,
    Cause: { Event: "AllocClientUpdated" },
    Actor: { kind: "node", id: "n1" },
  };
}

/** A logger whose messages the test reads. */
function recordingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: "info" }, { write: (s: string) => lines.push(JSON.parse(s)) });
  return { logger, warnings: () => lines.filter((l) => l.level === 40).map((l) => l.msg) };
}

describe("HistoryFile", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "history-file-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Three objects, interleaved, some records adding several entries. */
  function feed(file: HistoryFile, from: number, to: number): Map<string, HistoryEntry[]> {
    const expected = new Map<string, HistoryEntry[]>();
    for (let i = from; i <= to; i++) {
      const key = `allocation\u0000a${i % 3}`;
      const added =
        i % 5 === 0
          ? [entry(i, "ClientStatus", "running"), entry(i, "TaskEvents", { n: i })]
          : [entry(i, "DesiredStatus", `s${i}`)];
      file.append(key, i, added);
      expected.set(key, [...(expected.get(key) ?? []), ...added]);
      file.markApplied(i);
    }
    return expected;
  }

  it("gives back each object's entries in log order, before and after they reach the disk", async () => {
    const { file, rebuild } = await HistoryFile.open(dir, pino({ level: "silent" }));
    expect(rebuild).toBe(true);
    const expected = feed(file, 1, 200);
    for (const [key, entries] of expected) {
      expect(file.entries(key)).toEqual(entries);
      expect(file.count(key)).toBe(entries.length);
    }
    file.append("allocation\u0000late", 201, [entry(201, "ClientStatus", "pending")]);
    expect(file.entries("allocation\u0000late")).toEqual([entry(201, "ClientStatus", "pending")]);
    expect(file.entries("allocation\u0000none")).toEqual([]);
    await file.close();
  });

  it("encodes what it is fed on later turns of the loop, not in the apply that fed it, and writes it unasked", async () => {
    const { file } = await HistoryFile.open(dir, pino({ level: "silent" }));
    const path = join(dir, "history.log");
    const empty = statSync(path).size;
    const before = file.bytesSinceCheckpoint;
    const expected = feed(file, 1, 3000);
    // Nothing encoded yet: the records' apply is not held by the history.
    expect(file.bytesSinceCheckpoint).toBe(before);
    expect(statSync(path).size).toBe(empty);
    let turns = 0;
    while (queuedItems(file) > 0 && turns < 100_000) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      turns++;
    }
    expect(turns).toBeGreaterThan(0);
    expect(queuedItems(file)).toBe(0);
    // On disk up to the last mark without a flush or close: a crash now loses nothing fed.
    const reopened = await HistoryFile.open(dir, pino({ level: "silent" }));
    expect(reopened.rebuild).toBe(false);
    expect(reopened.file.applied).toBe(3000);
    for (const [key, entries] of expected) expect(reopened.file.entries(key)).toEqual(entries);
    await reopened.file.close();
    await file.close();
  });

  it("reads only the newest chunks a reverse page needs", async () => {
    const { file } = await HistoryFile.open(dir, pino({ level: "silent" }));
    feed(file, 1, 300);
    const key = "allocation\u0000a0";
    const newest = file.chunksNewestFirst(key).next().value!;
    expect(newest.index).toBe(300);
    expect(newest.before + newest.entries.length).toBe(file.count(key));
    await file.close();
  });

  it("reopens from its index, and from a scan when the index is gone, with the same answers", async () => {
    const first = await HistoryFile.open(dir, pino({ level: "silent" }));
    const expected = feed(first.file, 1, 100);
    await first.file.checkpoint();
    // Written after the checkpoint: found by the scan that follows it.
    for (const [key, more] of feed(first.file, 101, 150)) expected.set(key, [...expected.get(key)!, ...more]);
    first.file.flush();
    const again = await HistoryFile.open(dir, pino({ level: "silent" }));
    expect(again.rebuild).toBe(false);
    expect(again.file.applied).toBe(150);
    for (const [key, entries] of expected) expect(again.file.entries(key)).toEqual(entries);
    await again.file.close();
    await rm(join(dir, "history.idx"));
    const { logger, warnings } = recordingLogger();
    const scanned = await HistoryFile.open(dir, logger);
    expect(scanned.rebuild).toBe(false);
    expect(warnings()).toContain("history index missing or damaged: scanning the history file");
    for (const [key, entries] of expected) expect(scanned.file.entries(key)).toEqual(entries);
    await scanned.file.close();
  });

  it("skips records fed again after a restart (catch-up from the applied index)", async () => {
    const first = await HistoryFile.open(dir, pino({ level: "silent" }));
    const expected = feed(first.file, 1, 60);
    await first.file.close();
    const again = await HistoryFile.open(dir, pino({ level: "silent" }));
    feed(again.file, 55, 60);
    for (const [key, entries] of expected) expect(again.file.entries(key)).toEqual(entries);
    await again.file.close();
  });

  it("cuts a torn last chunk off with a warning and keeps the rest", async () => {
    const first = await HistoryFile.open(dir, pino({ level: "silent" }));
    const expected = feed(first.file, 1, 30);
    await first.file.checkpoint();
    first.file.append("allocation\u0000a0", 31, [entry(31, "ClientStatus", "failed")]);
    first.file.flush();
    const path = join(dir, "history.log");
    truncateSync(path, statSync(path).size - 3);
    const { logger, warnings } = recordingLogger();
    const again = await HistoryFile.open(dir, logger);
    expect(again.rebuild).toBe(false);
    expect(warnings()).toContain("history file ends with a partial chunk (a crash while writing): cut off");
    for (const [key, entries] of expected) expect(again.file.entries(key)).toEqual(entries);
    expect(again.file.applied).toBe(30);
    await again.file.close();
  });

  it("asks for a rebuild when a chunk before the tail is damaged, or the file is another format", async () => {
    const first = await HistoryFile.open(dir, pino({ level: "silent" }));
    feed(first.file, 1, 30);
    first.file.flush();
    await first.file.close();
    const path = join(dir, "history.log");
    const bytes = readFileSync(path);
    bytes[40] = bytes[40]! ^ 0xff;
    writeFileSync(path, bytes);
    await rm(join(dir, "history.idx"));
    const { logger, warnings } = recordingLogger();
    const damaged = await HistoryFile.open(dir, logger);
    expect(damaged.rebuild).toBe(true);
    expect(warnings()).toContain("history file damaged: rebuilding it from the log");
    expect(damaged.file.objects).toBe(0);
    await damaged.file.close();
    writeFileSync(path, "not a history file");
    appendFileSync(path, Buffer.alloc(64));
    const other = await HistoryFile.open(dir, pino({ level: "silent" }));
    expect(other.rebuild).toBe(true);
    await other.file.close();
  });

  it("compacts to the entries a retention keeps, and goes on from there", async () => {
    const first = await HistoryFile.open(dir, pino({ level: "silent" }));
    const fed = feed(first.file, 1, 200);
    const cutoff = entry(120, "", null).Time;
    const { kept, dropped } = await first.file.compact((e) => e.Time >= cutoff);
    const expected = new Map([...fed].map(([k, v]) => [k, v.filter((e) => e.Index >= 120)]));
    expect(kept + dropped).toBe([...fed.values()].reduce((n, v) => n + v.length, 0));
    expect(dropped).toBeGreaterThan(0);
    for (const [key, entries] of expected) {
      expect(first.file.entries(key)).toEqual(entries);
      expect(first.file.count(key)).toBe(entries.length);
    }
    expect(first.file.applied).toBe(200);
    // Fed on after the compaction, then reopened from its index and from a scan.
    for (const [key, more] of feed(first.file, 201, 230)) expected.set(key, [...expected.get(key)!, ...more]);
    await first.file.close();
    const again = await HistoryFile.open(dir, pino({ level: "silent" }));
    for (const [key, entries] of expected) expect(again.file.entries(key)).toEqual(entries);
    await again.file.close();
    await rm(join(dir, "history.idx"));
    const scanned = await HistoryFile.open(dir, pino({ level: "silent" }));
    expect(scanned.rebuild).toBe(false);
    expect(scanned.file.applied).toBe(230);
    for (const [key, entries] of expected) expect(scanned.file.entries(key)).toEqual(entries);
    await scanned.file.close();
  });
});

/** Chunks and marks fed and not encoded yet. */
function queuedItems(file: HistoryFile): number {
  const internals = file as unknown as { queued: unknown[]; queuedHead: number };
  return internals.queued.length - internals.queuedHead;
}
