import type { Envelope } from "../../streams/event-schema.ts";
import { packPlain, plainEnvelope } from "./envelope-codec.ts";

/**
 * An envelope's bytes up to its `data` value, as the codec packs it: `data`
 * is the envelope's last field, so these bytes followed by `data`'s packed
 * bytes are, byte for byte, what EnvelopeCodec.encode gives for the whole
 * envelope. A writer that packed a record's data piece by piece, ahead of
 * the write, assembles the record from them without packing it again.
 * The type and version are not checked against the schemas: the caller
 * writes a type it knows.
 */
export function envelopeHead(envelope: Omit<Envelope, "data">): Uint8Array {
  const bytes = packPlain(plainEnvelope({ ...envelope, data: null }));
  if (bytes[bytes.length - 1] !== 0xc0) throw new Error("the envelope's data is not its last field");
  return bytes.subarray(0, bytes.length - 1);
}

/** The msgpack header of an array of `length` items (fixarray, array16 or array32, as msgpackr writes). */
export function arrayHeader(length: number): Uint8Array {
  if (length < 0x10) return Uint8Array.of(0x90 | length);
  if (length < 0x1_0000) return Uint8Array.of(0xdc, length >>> 8, length & 0xff);
  return Uint8Array.of(0xdd, length >>> 24, (length >>> 16) & 0xff, (length >>> 8) & 0xff, length & 0xff);
}

/** How many bytes arrayHeader(length) takes. */
export function arrayHeaderLength(length: number): number {
  return length < 0x10 ? 1 : length < 0x1_0000 ? 3 : 5;
}
