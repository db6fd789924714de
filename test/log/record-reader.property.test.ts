import { appendFile, open, readFile, rm, truncate } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { pack } from "msgpackr";
import { afterAll, describe, expect, it } from "vitest";
import { CodecError, EnvelopeCodec, packPlain } from "../../src/codec/envelope-codec.ts";
import { LogError, type LogRecord } from "../../src/log/event-log.ts";
import { type FileLog, openFileLog, verifyFileLog } from "../../src/log/file/index.ts";
import { allSchemas } from "../../streams/index.ts";
import { hashDir, segmentNames } from "./segment-bytes.ts";
import { tempDirs } from "./temp-dirs.ts";

/**
 * Hardening: whatever happens to the bytes of a closed file log (bytes
 * overwritten, garbage appended, a file cut short), opening it either
 * succeeds with a prefix of the records written (a torn tail is cut off), or
 * refuses with LogError("corrupt") naming the file and byte offset and
 * changes nothing. Never another exception, never a record that was not
 * written, never a hang.
 */

/** numRuns, multiplied by PROPERTY_RUNS_SCALE for a longer soak run (the default stays quick). */
const runs = (n: number) => ({ numRuns: n * Math.max(1, Number(process.env.PROPERTY_RUNS_SCALE) || 1) });

const dirs = tempDirs("record-reader-prop");
afterAll(() => dirs.cleanup());

/** Small segments, so a log of a few dozen records spans several files. */
const SEGMENT_BYTES = 300;

type Damage =
  | { readonly kind: "overwrite"; readonly file: number; readonly at: number; readonly bytes: Uint8Array }
  | { readonly kind: "append"; readonly file: number; readonly bytes: Uint8Array }
  | { readonly kind: "truncate"; readonly file: number; readonly at: number };

/** `file` and `at` are resolved modulo the number of segments / the file size, so any value is usable. */
const damage: fc.Arbitrary<Damage> = fc.oneof(
  fc.record({
    kind: fc.constant("overwrite" as const),
    file: fc.nat(),
    at: fc.nat(),
    bytes: fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 12 }),
      fc.uint8Array({ minLength: 1, maxLength: 12 }).map((b) => b.fill(0)),
      fc.uint8Array({ minLength: 1, maxLength: 12 }).map((b) => b.fill(0xff)),
    ),
  }),
  fc.record({
    kind: fc.constant("append" as const),
    file: fc.nat(),
    bytes: fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 64 }),
      fc.nat(64).map((n) => new Uint8Array(n + 1)),
      // A frame header claiming a payload, with nothing or garbage after it.
      fc
        .tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.uint8Array({ maxLength: 20 }))
        .map(([length, rest]) => {
          const head = Buffer.alloc(8);
          head.writeUInt32LE(length, 0);
          return new Uint8Array(Buffer.concat([head, rest]));
        }),
    ),
  }),
  fc.record({ kind: fc.constant("truncate" as const), file: fc.nat(), at: fc.nat() }),
);

/** Most damage hits the last segment, where torn writes happen; some hits sealed ones. */
const damages = fc.array(
  fc.tuple(damage, fc.boolean()).map(([d, onLast]) => (onLast ? { ...d, file: -1 } : d)),
  { minLength: 1, maxLength: 3 },
);

const payloads = fc.array(fc.uint8Array({ maxLength: 90 }), { minLength: 1, maxLength: 30 });

async function writeLog(records: readonly Uint8Array[], batch: number): Promise<string> {
  const dir = await dirs.make();
  const log = await openFileLog(dir, { segmentBytes: SEGMENT_BYTES, fsync: "never" });
  try {
    for (let i = 0; i < records.length; i += batch) await log.append(records.slice(i, i + batch));
  } finally {
    await log.close();
  }
  return dir;
}

async function applyDamage(dir: string, d: Damage): Promise<void> {
  const names = await segmentNames(dir);
  if (names.length === 0) return;
  const name = names[d.file < 0 ? names.length - 1 : d.file % names.length] as string;
  const path = join(dir, name);
  const size = (await readFile(path)).length;
  switch (d.kind) {
    case "overwrite": {
      if (size === 0) return;
      const fh = await open(path, "r+");
      try {
        const at = d.at % size;
        const bytes = d.bytes.subarray(0, size - at);
        await fh.write(bytes, 0, bytes.length, at);
      } finally {
        await fh.close();
      }
      return;
    }
    case "append":
      await appendFile(path, d.bytes);
      return;
    case "truncate":
      await truncate(path, d.at % (size + 1));
      return;
  }
}

async function readAll(log: FileLog): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const batch of log.read(1)) out.push(...batch);
  return out;
}

/** Opens, or returns the error; anything but a corrupt-log LogError fails the property. */
async function openOrCorrupt(dir: string): Promise<FileLog | LogError> {
  try {
    return await openFileLog(dir, { segmentBytes: SEGMENT_BYTES, fsync: "never" });
  } catch (err) {
    if (err instanceof LogError && err.code === "corrupt") return err;
    throw err;
  }
}

describe("file log: damaged bytes open as a prefix or as a located corruption error", () => {
  it("overwritten ranges, appended garbage, truncation", async () => {
    const seen = { corrupt: 0, whole: 0, cut: 0 };
    await fc.assert(
      fc.asyncProperty(payloads, fc.integer({ min: 1, max: 5 }), damages, async (records, batch, hits) => {
        const dir = await writeLog(records, batch);
        try {
          for (const d of hits) await applyDamage(dir, d);
          const names = await segmentNames(dir);
          const report = await verifyFileLog(dir);
          const before = await hashDir(dir);
          const opened = await openOrCorrupt(dir);

          if (opened instanceof LogError) {
            // Named file and offset, the verify report agrees, nothing changed on disk.
            expect(opened.message).toMatch(/file log is corrupt: .*\.seg at byte offset \d+/);
            expect(names.some((n) => opened.message.includes(join(dir, n)))).toBe(true);
            expect(report.healthy).toBe(false);
            expect(report.problem?.kind).toBe("corrupt");
            expect(opened.message).toContain(
              `${report.problem?.file} at byte offset ${report.problem?.offset}`,
            );
            expect(await hashDir(dir)).toEqual(before);
            seen.corrupt++;
            return;
          }

          const log = opened;
          try {
            expect(report.healthy).toBe(true);
            const read = await readAll(log);
            // A prefix of what was written, at the indexes it was written at.
            expect(read.length).toBeLessThanOrEqual(records.length);
            expect(log.lastIndex()).toBe(read.length);
            expect(report.lastIndex).toBe(read.length);
            if (read.length === records.length) seen.whole++;
            else seen.cut++;
            read.forEach((r, i) => {
              expect(r.index).toBe(i + 1);
              expect(Buffer.from(r.bytes).equals(Buffer.from(records[i] as Uint8Array))).toBe(true);
            });
            // The log goes on from there, and reopens cleanly.
            const next = read.length + 1;
            expect(await log.append([Buffer.from("after")])).toEqual({ first: next, last: next });
          } finally {
            await log.close();
          }
          const again = await openFileLog(dir, { segmentBytes: SEGMENT_BYTES, fsync: "never" });
          try {
            expect(again.lastIndex()).toBe(log.lastIndex());
            expect((await verifyFileLog(dir)).problem).toBeUndefined();
          } finally {
            await again.close();
          }
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      }),
      runs(150),
    );
    // The damage generated reaches all three outcomes (else the property proves little).
    expect(seen.corrupt).toBeGreaterThan(0);
    expect(seen.whole + seen.cut).toBeGreaterThan(0);
    expect(seen.cut).toBeGreaterThan(0);
  });

  it("cutting the last segment at any offset loses only the records after the cut", async () => {
    await fc.assert(
      fc.asyncProperty(payloads, fc.nat(), async (records, at) => {
        const dir = await writeLog(records, 1);
        try {
          const names = await segmentNames(dir);
          const last = join(dir, names[names.length - 1] as string);
          const bytes = await readFile(last);
          const cut = at % (bytes.length + 1);
          await truncate(last, cut);
          // Frames before the cut that are whole survive; the count is read independently.
          let whole = 0;
          for (let pos = 24; pos + 8 <= cut; whole++) {
            const end = pos + 8 + bytes.readUInt32LE(pos);
            if (end > cut) break;
            pos = end;
          }
          const first = Number((names[names.length - 1] as string).slice(0, 20));
          const log = await openFileLog(dir, { segmentBytes: SEGMENT_BYTES, fsync: "never" });
          try {
            // A header cut short removes the file: its records are those of the previous segments.
            expect(log.lastIndex()).toBe(cut < 24 ? first - 1 : first - 1 + whole);
            const read = await readAll(log);
            expect(read.map((r) => Buffer.from(r.bytes))).toEqual(
              records.slice(0, read.length).map((r) => Buffer.from(r)),
            );
          } finally {
            await log.close();
          }
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      }),
      runs(60),
    );
  });
});

describe("envelope codec: decoding arbitrary bytes", () => {
  const codec = new EnvelopeCodec(allSchemas);
  const types = allSchemas.map((s) => s.type);

  /** Bytes that are msgpack maps shaped more or less like envelopes. */
  const envelopeish = fc
    .record(
      {
        type: fc.oneof(fc.constantFrom(...types), fc.string({ maxLength: 8 })),
        v: fc.oneof(fc.constantFrom(0, 1, 2, -1, 1.5, 2 ** 53), fc.string({ maxLength: 2 })),
        at: fc.oneof(fc.integer(), fc.string({ maxLength: 2 }), fc.constant(null)),
        by: fc.anything({ maxDepth: 1 }),
        data: fc.anything({ maxDepth: 2 }),
      },
      { requiredKeys: [] },
    )
    .map((e) => pack(e) as Uint8Array);

  const bytes = fc.oneof(
    fc.uint8Array({ maxLength: 128 }),
    envelopeish,
    fc.tuple(envelopeish, fc.nat(), fc.integer({ min: 0, max: 255 })).map(([b, at, byte]) => {
      const copy = Uint8Array.from(b);
      if (copy.length > 0) copy[at % copy.length] = byte;
      return copy;
    }),
    fc.tuple(envelopeish, fc.nat()).map(([b, n]) => b.subarray(0, n % (b.length + 1))),
  );

  it("gives an envelope of a known type, or throws CodecError", () => {
    fc.assert(
      fc.property(bytes, (b) => {
        try {
          const e = codec.decode(b);
          expect(codec.has(e.type)).toBe(true);
          expect(Number.isInteger(e.v) && e.v >= 1).toBe(true);
          expect(typeof e.at).toBe("number");
          expect("data" in e).toBe(true);
        } catch (err) {
          if (!(err instanceof CodecError)) throw err;
        }
      }),
      runs(3000),
    );
  });

  it("decodes what it encoded", () => {
    // msgpackr decodes a "__proto__" key as "__proto_" (its guard against
    // prototype pollution), so such data does not round-trip; left out here.
    const hasProtoKey = (v: unknown): boolean =>
      v !== null &&
      typeof v === "object" &&
      (Object.hasOwn(v, "__proto__") || Object.values(v).some(hasProtoKey));
    const jsonish = fc.jsonValue({ maxDepth: 3 }).filter((v) => !hasProtoKey(v));
    fc.assert(
      fc.property(fc.constantFrom(...allSchemas), fc.integer({ min: 0 }), jsonish, (schema, at, data) => {
        // Written at each type's current version: an older one is upcast when read.
        const envelope = { type: schema.type, v: schema.version, at, data };
        const decoded = codec.decode(codec.encode(envelope));
        // Round trip through plain msgpack, the same way a downstream reader sees it.
        expect(packPlain(decoded)).toEqual(packPlain(envelope));
      }),
      runs(500),
    );
  });
});
