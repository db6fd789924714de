import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { HistoryEntry, HistoryRow } from "../../projections/history.ts";
import { packPlain, unpackPlain } from "../../src/codec/envelope-codec.ts";
import { decodeChunk, encodeChunk } from "../../src/history/history-chunk.ts";
import { HistoryFile } from "../../src/history/history-file.ts";
import { frameChecksum } from "../../src/log/file/format.ts";
import { storeOverKeptLog } from "../fixtures/kept-log-store.ts";

/**
 * The figures docs/architecture.md ("History store") quotes for encoding
 * and decoding history chunks: a kept log (a load bench run's,
 * `--keep-data`: its log/ directory) replayed into a fresh store, every
 * change of the `history` table taken as the history store takes it (the
 * row's key, the record's index, its `Latest` entries, which share their
 * record's Cause and Actor objects as the projection made them), then
 * every chunk encoded and decoded ROUNDS times: process CPU and bytes a
 * chunk, and the whole file fed, settled and written; beside them, in the
 * same rounds, the chunks as format 2 encoded them (the entries as an array
 * of maps, widened as packPlain does) for comparison. On demand only:
 * CHRONOMAD_HISTORY_CHUNK_FIGURES=/path/to/log npx vitest run test/history/chunk-figures.test.ts
 */
const dir = process.env.CHRONOMAD_HISTORY_CHUNK_FIGURES;
if (!dir)
  console.warn("history chunk figures skipped: set CHRONOMAD_HISTORY_CHUNK_FIGURES to a kept log directory");
const ROUNDS = Number(process.env.CHRONOMAD_HISTORY_CHUNK_FIGURES_ROUNDS ?? 7);

interface Change {
  readonly key: string;
  readonly index: number;
  readonly entries: readonly HistoryEntry[];
}

async function historyChanges(logDir: string): Promise<Change[]> {
  const store = await storeOverKeptLog(logDir);
  const changes: Change[] = [];
  store.change$.subscribe((c) => {
    if (c.table !== "history" || c.after === undefined) return;
    const row = c.after as HistoryRow;
    changes.push({ key: row.Key, index: c.index, entries: row.Latest });
  });
  await store.start();
  await store.caughtUp();
  await store.stop();
  return changes;
}

const cpuMicros = (from: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(from);
  return used.user + used.system;
};

/** A chunk as format 2 wrote it: the same head, then packPlain of the entries. */
function encodeFormat2(key: string, index: number, entries: readonly HistoryEntry[]): Buffer {
  const body = packPlain(entries);
  const headLength = 24 + Buffer.byteLength(key, "utf8");
  const chunk = Buffer.allocUnsafe(12 + headLength + body.length);
  chunk.writeDoubleLE(-1, 12);
  chunk.writeUInt32LE(0, 20);
  chunk.writeDoubleLE(index, 24);
  chunk.writeUInt32LE(entries.length, 32);
  chunk.write(key, 36, "utf8");
  chunk.set(body, 12 + headLength);
  chunk.writeUInt32LE(headLength + body.length, 0);
  chunk.writeUInt32LE(frameChecksum(chunk, 12), 4);
  chunk.writeUInt32LE(headLength, 8);
  return chunk;
}

function decodeFormat2(chunk: Buffer): HistoryEntry[] {
  if (chunk.readUInt32LE(4) !== frameChecksum(chunk, 12)) throw new Error("checksum");
  return unpackPlain(chunk.subarray(12 + chunk.readUInt32LE(8))) as HistoryEntry[];
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe.skipIf(!dir)("history chunks (figures)", () => {
  it("reports CPU µs and bytes a chunk, encoded and decoded", async () => {
    const changes = await historyChanges(dir!);
    let entries = 0;
    for (const c of changes) entries += c.entries.length;
    const chunks: Buffer[] = changes.map((c) =>
      encodeChunk([c.key, -1, 0, c.index, c.entries.length], c.entries),
    );
    // What is read back is what was fed.
    for (let i = 0; i < changes.length; i++) {
      const { head, entries: back } = decodeChunk(chunks[i]!, 0);
      expect(head[0]).toBe(changes[i]!.key);
      expect(back).toStrictEqual(changes[i]!.entries);
    }
    const old = changes.map((c) => encodeFormat2(c.key, c.index, c.entries));
    for (let i = 0; i < changes.length; i++)
      expect(decodeFormat2(old[i]!)).toStrictEqual(changes[i]!.entries);
    const bytes = chunks.reduce((n, b) => n + b.length, 0);
    const oldBytes = old.reduce((n, b) => n + b.length, 0);
    const encode: number[] = [];
    const decode: number[] = [];
    const encodeOld: number[] = [];
    const decodeOld: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      let t = process.cpuUsage();
      for (const c of changes) encodeFormat2(c.key, c.index, c.entries);
      encodeOld.push(cpuMicros(t) / changes.length);
      t = process.cpuUsage();
      for (const c of changes) encodeChunk([c.key, -1, 0, c.index, c.entries.length], c.entries);
      encode.push(cpuMicros(t) / changes.length);
      t = process.cpuUsage();
      for (const chunk of old) decodeFormat2(chunk);
      decodeOld.push(cpuMicros(t) / changes.length);
      t = process.cpuUsage();
      for (const chunk of chunks) decodeChunk(chunk, 0);
      decode.push(cpuMicros(t) / changes.length);
    }
    // The file as the history store feeds it: every chunk queued, a mark per record, settled and written.
    const files: number[] = [];
    for (let round = 0; round < 3; round++) {
      const fileDir = await mkdtemp(join(tmpdir(), "history-figures-"));
      const { file } = await HistoryFile.open(fileDir, pino({ level: "silent" }));
      const t = process.cpuUsage();
      let last = 0;
      for (const c of changes) {
        if (c.index !== last && last !== 0) file.markApplied(last);
        file.append(c.key, c.index, c.entries);
        last = c.index;
      }
      file.markApplied(last);
      file.flush();
      files.push(cpuMicros(t) / changes.length);
      await file.close();
      await rm(fileDir, { recursive: true, force: true });
    }
    const fmt = (xs: readonly number[]) =>
      `${median(xs).toFixed(2)} (${xs.map((x) => x.toFixed(2)).join(" ")})`;
    console.log(
      [
        `${changes.length} chunks, ${entries} entries (${(entries / changes.length).toFixed(2)} a chunk)`,
        `bytes a chunk: format 2 ${(oldBytes / changes.length).toFixed(0)} (${(oldBytes / 2 ** 20).toFixed(1)} MiB), now ${(bytes / changes.length).toFixed(0)} (${(bytes / 2 ** 20).toFixed(1)} MiB)`,
        `encode CPU µs a chunk: format 2 ${fmt(encodeOld)}; now ${fmt(encode)}`,
        `decode CPU µs a chunk: format 2 ${fmt(decodeOld)}; now ${fmt(decode)}`,
        `file fed, settled, written: CPU µs a chunk: ${fmt(files)}`,
      ].join("\n"),
    );
  }, 600_000);
});
