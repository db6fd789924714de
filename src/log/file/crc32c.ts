/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used by iSCSI,
 * ext4, LevelDB and Kafka record batches. Node 20 ships only zlib's CRC-32
 * (a different polynomial), so it is computed here with slicing-by-8: eight
 * 256-entry tables let the loop consume 8 bytes per step, which runs at
 * hundreds of MB/s in V8 and keeps the checksum far below the cost of the I/O.
 */
const POLY = 0x82f63b78;

const TABLES: Int32Array = (() => {
  const t = new Int32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t[n] = c;
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n]!;
    for (let s = 1; s < 8; s++) {
      c = t[c & 0xff]! ^ (c >>> 8);
      t[s * 256 + n] = c;
    }
  }
  return t;
})();

/**
 * CRC-32C of `data[start, end)`, continuing from `previous` (the CRC of the
 * bytes before, 0 to start fresh). Returns an unsigned 32-bit value.
 */
export function crc32c(data: Uint8Array, start = 0, end = data.length, previous = 0): number {
  const t = TABLES;
  let crc = ~previous;
  let i = start;
  // Align nothing: typed-array byte reads are as fast as word reads in V8, and
  // reading bytes keeps the result independent of the platform's endianness.
  for (const stop = end - 8; i <= stop; i += 8) {
    const lo = crc ^ (data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24));
    crc =
      t[7 * 256 + (lo & 0xff)]! ^
      t[6 * 256 + ((lo >>> 8) & 0xff)]! ^
      t[5 * 256 + ((lo >>> 16) & 0xff)]! ^
      t[4 * 256 + (lo >>> 24)]! ^
      t[3 * 256 + data[i + 4]!]! ^
      t[2 * 256 + data[i + 5]!]! ^
      t[256 + data[i + 6]!]! ^
      t[data[i + 7]!]!;
  }
  for (; i < end; i++) crc = t[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8);
  return ~crc >>> 0;
}
