import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

/**
 * msgpackr's JS decoder (unpack.js `readStringJS`) builds an array of char
 * codes for every string of 16 to 64 bytes (UUIDs, names) and turns it into
 * a string with `String.fromCharCode.apply`: most of what decoding a client
 * update record allocates. Its native extractor (msgpackr-extract) decodes
 * all of a record's strings at once into one string and slices it; the load
 * benchmark ran several times slower with it, for reasons not pinned down.
 *
 * msgpackr calls an extractor at a string (its header's offset in `buffer`)
 * and, if the extractor returns one string rather than an array, calls it
 * again at the next one. This one returns just that string, made by one
 * native call on a Buffer view of the source (kept while records come from
 * the same ArrayBuffer): no char-code array, no parent string. What it
 * cannot read (a header or body past `end`) it throws on, and msgpackr reads
 * the rest of that source with its JS path, which reports the truncation as
 * it always did. docs/architecture.md "What the burst allocates".
 */
export function extractString(start: number, end: number, buffer: ArrayBufferLike): string {
  let bytes = view;
  if (buffer !== viewOf) {
    bytes = Buffer.from(buffer) as SlicingBuffer;
    view = bytes;
    viewOf = buffer;
  }
  const token = bytes[start]!;
  let length: number;
  let from: number;
  if (token >= 0xa0 && token < 0xc0) {
    length = token - 0xa0;
    from = start + 1;
  } else if (token === 0xd9) {
    length = bytes[start + 1]!;
    from = start + 2;
  } else if (token === 0xda) {
    length = (bytes[start + 1]! << 8) | bytes[start + 2]!;
    from = start + 3;
  } else if (token === 0xdb) {
    length = bytes.readUInt32BE(start + 1);
    from = start + 5;
  } else {
    throw new RangeError(`no msgpack string at ${start}`);
  }
  const to = from + length;
  // NaN (a header read past the buffer) fails this too.
  if (!(to <= end)) throw new RangeError("msgpack string runs past its source");
  if (length > INTERNED_MAX) {
    // ASCII, the usual case, is copied as Latin-1: no UTF-8 decoding to do.
    for (let i = from; i < to; i++) {
      if (bytes[i]! >= 0x80) return bytes.utf8Slice(from, to);
    }
    return bytes.latin1Slice(from, to);
  }
  let hash = length;
  for (let i = from; i < to; i++) {
    const b = bytes[i]!;
    if (b >= 0x80) return bytes.utf8Slice(from, to);
    hash = Math.imul(hash ^ b, 0x01000193);
  }
  const slot = (hash ^ (hash >>> 15)) & (INTERNED_SLOTS - 1);
  const cached = interned[slot];
  if (cached !== undefined && cached.length === length) {
    let i = 0;
    while (i < length && cached.charCodeAt(i) === bytes[from + i]) i++;
    if (i === length) return cached;
  }
  const string = bytes.latin1Slice(from, to);
  interned[slot] = string;
  return string;
}

/**
 * Short ASCII strings are mostly map keys and enumerated values (field
 * names, ClientStatus, task and group names), repeated from record to
 * record: one string each, kept by a hash of its bytes, is no allocation
 * and, as a property name, one V8 has already internalized. UUIDs (36
 * bytes) and longer text are made anew; a slot holds the last string that
 * hashed to it.
 */
const INTERNED_MAX = 32;
const INTERNED_SLOTS = 4096;
const interned: (string | undefined)[] = new Array(INTERNED_SLOTS).fill(undefined);

/**
 * The methods `buf.toString("utf8" | "latin1", start, end)` calls, without
 * its argument checks; undeclared in Node's types, used by msgpackr's own
 * JS path (longStringInJS) too.
 */
type SlicingBuffer = Buffer & {
  utf8Slice(start: number, end: number): string;
  latin1Slice(start: number, end: number): string;
};

let view = Buffer.alloc(0) as SlicingBuffer;
let viewOf: ArrayBufferLike = view.buffer;

/**
 * msgpackr's `setExtractor` is not among its package's exports: it is taken
 * from unpack.js, the module instance the package's entry re-exports (the
 * same file URL, so the same decoder state). Test runners lack
 * import.meta.resolve, hence createRequire.
 */
const require = createRequire(import.meta.url);
const unpackUrl = new URL("../unpack.js", pathToFileURL(require.resolve("msgpackr")));
const unpack = (await import(unpackUrl.href)) as { setExtractor(extract: typeof extractString): void };
unpack.setExtractor(extractString);
