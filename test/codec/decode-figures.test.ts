import { isNativeAccelerationEnabled } from "msgpackr";
import { describe, expect, it } from "vitest";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { openFileLogReadOnly } from "../../src/log/file/index.ts";
import type { Envelope } from "../../streams/event-schema.ts";
import { allSchemas } from "../../streams/index.ts";
import { allocatedDuring } from "../heap-allocation.ts";

/**
 * The figures docs/architecture.md ("What the burst allocates") quotes for
 * decoding a burst's records alone: a kept load-bench log (`--keep-data`:
 * its log/ directory), its records grouped by type and decoded, the heap
 * allocated (V8's heap statistics around each GC) and the process CPU per
 * entry (placements of a plan record, allocations of a client update) or
 * per record. Run on demand only:
 * CHRONOMAD_DECODE_FIGURES=/path/to/log npx vitest run test/codec/decode-figures.test.ts
 * (CHRONOMAD_DECODE_FIGURES_RECORDS: records read, 30,000 unless set).
 */
const dir = process.env.CHRONOMAD_DECODE_FIGURES;
const RECORDS = Number(process.env.CHRONOMAD_DECODE_FIGURES_RECORDS ?? 30_000);
const ROUNDS = 3;

/** How many allocations a record places or reports (1 for other records). */
function entriesOf(e: Envelope): number {
  const data = e.data as { Placed?: unknown[]; Placements?: unknown[]; Allocs?: unknown[] };
  if (e.type === "AllocsPlanApplied") return (data.Placed?.length ?? 0) + (data.Placements?.length ?? 0);
  if (e.type === "AllocClientUpdated") return data.Allocs?.length ?? 0;
  return 1;
}

describe.skipIf(!dir)("decoding a burst's records (figures)", () => {
  it("reports heap bytes and CPU per entry, by record type", async () => {
    const codec = new EnvelopeCodec(allSchemas);
    const source = await openFileLogReadOnly(dir!);
    const byType = new Map<string, { records: Uint8Array[]; entries: number; bytes: number }>();
    let read = 0;
    for await (const batch of source.read(1, { maxBatch: 1000 })) {
      for (const r of batch) {
        const e = codec.decode(r.bytes);
        let t = byType.get(e.type);
        if (!t) {
          t = { records: [], entries: 0, bytes: 0 };
          byType.set(e.type, t);
        }
        t.records.push(r.bytes);
        t.entries += entriesOf(e);
        t.bytes += r.bytes.length;
      }
      read += batch.length;
      if (read >= RECORDS) break;
    }
    await source.close();
    const lines = [`native acceleration (an extractor installed): ${isNativeAccelerationEnabled}`];
    const sink: Envelope[] = [];
    for (const [type, t] of [...byType].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 6)) {
      const rounds: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const { bytes, scavenges, cpuUs } = allocatedDuring(() => {
          for (const r of t.records) sink.push(codec.decode(r));
          sink.length = 0;
        });
        rounds.push(
          `${(bytes / t.entries).toFixed(0)} B, ${(cpuUs / t.entries).toFixed(2)} µs CPU (${scavenges} GCs)`,
        );
      }
      lines.push(
        `${type}: ${t.records.length} records, ${t.entries} entries, ${(t.bytes / t.records.length).toFixed(0)} B a record; an entry: ${rounds.join("; ")}`,
      );
    }
    console.log(lines.join("\n"));
    expect(byType.size).toBeGreaterThan(0);
  }, 600_000);
});
