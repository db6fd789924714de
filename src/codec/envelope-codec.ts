import { type Options, Packr } from "msgpackr";
import type { Envelope, EventSchema } from "../../streams/event-schema.ts";
import { widenIntegralFloats } from "./wide-integers.ts";
// Installs the decoder's string path for every user of msgpackr in this thread.
import "./string-extractor.ts";

/**
 * Plain msgpack, no msgpackr records or shared structures: the log is read by
 * tools that only know the msgpack spec. Maps decode to plain objects.
 * Undefined properties are left out and undefined array items become nil, so
 * nothing needs msgpackr's own extension types, and a row rebuilt from a
 * snapshot encodes exactly like the row the projection built.
 *
 * Integers are written as msgpack integers whatever their size
 * (wide-integers.ts) and read back as JS numbers (int64AsType "number"), the
 * values the writer had; older records hold such integers as float64s, which
 * read back as the same numbers. Other readers get integers: a JS reader that
 * wants BigInts past 2^53 decodes with int64AsType "bigint" or "auto"
 * (docs/log-format.md).
 */
// skipValues exists in msgpackr 1.10+ but is missing from its type declarations.
// Exported for the history file's chunks (src/history/history-chunk.ts), which pack with these options unwidened.
export const plainOptions: Readonly<Options & { skipValues: unknown[] }> = {
  useRecords: false,
  moreTypes: false,
  mapsAsObjects: true,
  variableMapSize: true,
  int64AsType: "number",
  skipValues: [undefined],
  encodeUndefinedAsNil: true,
};
const packr = new Packr(plainOptions);

export class CodecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CodecError";
  }
}

/** Encodes any value as plain msgpack (snapshots use it too). */
export function packPlain(value: unknown): Uint8Array {
  return widenIntegralFloats(packr.pack(value));
}

export function unpackPlain(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}

/**
 * Turns envelopes into log bytes and back, lifting old schema versions to the
 * current one on the way in, so projections only ever see current shapes.
 */
export class EnvelopeCodec {
  private readonly byType = new Map<string, EventSchema>();

  constructor(schemas: Iterable<EventSchema>) {
    for (const s of schemas) {
      if (this.byType.has(s.type)) throw new CodecError(`event type ${s.type} is declared twice`);
      for (let v = 1; v < s.version; v++) {
        if (!s.upcast?.[v])
          throw new CodecError(`event type ${s.type} has no upcaster from v${v} to v${v + 1}`);
      }
      this.byType.set(s.type, s);
    }
  }

  encode(envelope: Envelope): Uint8Array {
    const schema = this.byType.get(envelope.type);
    if (!schema) throw new CodecError(`unknown event type ${envelope.type}`);
    if (envelope.v !== schema.version) {
      throw new CodecError(
        `event ${envelope.type} must be written at v${schema.version}, not v${envelope.v}`,
      );
    }
    return widenIntegralFloats(packr.pack(plainEnvelope(envelope)));
  }

  decode(bytes: Uint8Array): Envelope {
    let raw: unknown;
    try {
      raw = packr.unpack(bytes);
    } catch (err) {
      throw new CodecError(`record is not valid msgpack: ${(err as Error).message}`);
    }
    if (!isEnvelopeShape(raw)) throw new CodecError("record is not an envelope {type, v, at, data}");
    const schema = this.byType.get(raw.type);
    if (!schema) {
      throw new CodecError(
        `unknown event type ${raw.type}: the log was written by a newer chronomad; upgrade`,
      );
    }
    if (raw.v > schema.version) {
      throw new CodecError(
        `event ${raw.type} v${raw.v} is newer than this server understands (v${schema.version}); upgrade`,
      );
    }
    if (raw.v === schema.version) return raw;
    let data = raw.data;
    for (let v = raw.v; v < schema.version; v++) {
      // Upcasters read the older shape; data without it is a corrupt record,
      // reported as such rather than as whatever the upcaster tripped on.
      try {
        data = schema.upcast![v]!(data);
      } catch (err) {
        throw new CodecError(
          `event ${raw.type} v${v} cannot be read as v${v + 1}: ${(err as Error).message}`,
        );
      }
    }
    return { ...raw, v: schema.version, data };
  }

  has(type: string): boolean {
    return this.byType.has(type);
  }
}

/**
 * The object the codec packs for an envelope. A fixed key order keeps the
 * bytes of equal envelopes identical, and `data` comes last, so a record can
 * be assembled from its envelope's head and its data's bytes
 * (envelope-head.ts).
 */
export function plainEnvelope(envelope: Envelope): Record<string, unknown> {
  const plain: Record<string, unknown> = { type: envelope.type, v: envelope.v, at: envelope.at };
  if (envelope.by) plain.by = envelope.by;
  if (envelope.cause) plain.cause = envelope.cause;
  plain.data = envelope.data;
  return plain;
}

function isEnvelopeShape(x: unknown): x is Envelope {
  if (typeof x !== "object" || x === null) return false;
  const e = x as Record<string, unknown>;
  return (
    typeof e.type === "string" &&
    typeof e.v === "number" &&
    Number.isInteger(e.v) &&
    e.v >= 1 &&
    typeof e.at === "number" &&
    "data" in e
  );
}
