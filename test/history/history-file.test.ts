import { appendFileSync, readFileSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { HistoryEntry } from "../../projections/history.ts";
import { decodeChunk, encodeChunk } from "../../src/history/history-chunk.ts";
import { FORMAT_VERSION, HistoryFile } from "../../src/history/history-file.ts";

/** An entry with a Cause and Actor of its own, unless given the record's (as the projection shares them). */
function entry(
  index: number,
  field: string,
  to: unknown,
  shared?: Pick<HistoryEntry, "Cause" | "Actor">,
): HistoryEntry {
  return {
    Index: index,
    Time: new Date(1_763_800_000_000 + index).toISOString(),
    Field: field,
    From: null,
    To: to,
    Cause: shared?.Cause ?? { Event: "AllocClientUpdated" },
    Actor: shared?.Actor ?? { kind: "node", id: "n1" },
  };
}

/** One Cause and Actor for a record's entries, as the projection makes them. */
const recordOf = (index: number): Pick<HistoryEntry, "Cause" | "Actor"> => ({
  Cause: { Event: "AllocClientUpdated", EvalID: `eval-${index}` },
  Actor: { kind: "node", id: `n${index % 4}` },
});

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
      // Entries sharing their record's Cause and Actor, entries with their own, one with a Diff.
      const record = recordOf(i);
      const added =
        i % 5 === 0
          ? [entry(i, "ClientStatus", "running", record), entry(i, "TaskEvents", { n: i }, record)]
          : i % 7 === 0
            ? [entry(i, "ClientStatus", "running"), entry(i, "TaskEvents", { n: i, t: 1.796e18 + i * 1e6 })]
            : i % 11 === 0
              ? [{ ...entry(i, "Version", i, record), Diff: { Type: "Edited" } }]
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

  it("writes a record's Cause and Actor once a chunk, and reads back the entries it was given", () => {
    const record = recordOf(42);
    const many = Array.from({ length: 6 }, (_, n) =>
      entry(
        42,
        n === 0 ? "ClientStatus" : "TaskEvents",
        n === 0 ? "running" : { n, Time: 1.796e18 + n },
        record,
      ),
    );
    const once = (entries: HistoryEntry[]) => {
      const chunk = encodeChunk(["allocation\u0000a", -1, 0, 42, entries.length], entries);
      expect(decodeChunk(chunk, 0).entries).toStrictEqual(entries);
      return chunk.toString("latin1").split("eval-42").length - 1;
    };
    expect(once(many)).toBe(1);
    // Entries of one record with causes of their own, or with a Diff: each written whole.
    const unshared = many.map((e) => ({ ...e, Cause: { ...e.Cause } }));
    expect(once(unshared)).toBe(6);
    expect(once([many[0]!, { ...many[1]!, Diff: { Type: "Edited" } }])).toBe(2);
    expect(once([many[0]!, { ...many[1]!, Index: 43 }])).toBe(2);
  });

  it("rebuilds a file of format 2 (entries as maps, before the shared form) with a warning", async () => {
    const first = await HistoryFile.open(dir, pino({ level: "silent" }));
    feed(first.file, 1, 30);
    await first.file.close();
    const path = join(dir, "history.log");
    const bytes = readFileSync(path);
    expect(bytes.readUInt32LE(8)).toBe(FORMAT_VERSION);
    bytes.writeUInt32LE(2, 8);
    writeFileSync(path, bytes);
    const { logger, warnings } = recordingLogger();
    const old = await HistoryFile.open(dir, logger);
    expect(old.rebuild).toBe(true);
    expect(warnings()).toContain("history file is not one this version writes: rebuilding it from the log");
    expect(old.file.objects).toBe(0);
    expect(old.file.applied).toBe(0);
    expect(readFileSync(path).readUInt32LE(8)).toBe(FORMAT_VERSION);
    await old.file.close();
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
