/**
 * Snappy's block format (what Go's snappy.Encode writes and snappy.Decode
 * reads), as literals only: the input's length as a varint, then the bytes
 * in literal elements of at most 64 KiB. Any snappy decoder reads it back;
 * it is not compressed, which a dispatch payload (16 KiB at most) does not
 * need.
 */
export function snappyEncodeLiteral(input: Uint8Array): Buffer {
  const parts: number[] = [];
  for (let n = input.length; ; ) {
    if (n < 0x80) {
      parts.push(n);
      break;
    }
    parts.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  const chunks: Buffer[] = [Buffer.from(parts)];
  for (let at = 0; at < input.length; at += 65_536) {
    const chunk = input.subarray(at, Math.min(input.length, at + 65_536));
    const m = chunk.length - 1;
    // Tag byte: lengths below 60 in the tag itself, else in the 1 or 2 bytes after it (60, 61).
    if (m < 60) chunks.push(Buffer.from([m << 2]));
    else if (m < 256) chunks.push(Buffer.from([60 << 2, m]));
    else chunks.push(Buffer.from([61 << 2, m & 0xff, m >> 8]));
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** Reads a snappy block back (literals and copies), or null when it is not one. */
export function snappyDecode(block: Uint8Array): Buffer | null {
  let pos = 0;
  let length = 0;
  for (let shift = 0; ; shift += 7) {
    if (pos >= block.length || shift > 28) return null;
    const b = block[pos++]!;
    length += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) break;
  }
  const out = Buffer.alloc(length);
  let o = 0;
  while (pos < block.length) {
    const tag = block[pos++]!;
    const kind = tag & 3;
    if (kind === 0) {
      let m = tag >> 2;
      if (m >= 60) {
        const extra = m - 59;
        if (pos + extra > block.length) return null;
        m = 0;
        for (let i = 0; i < extra; i++) m += block[pos + i]! * 2 ** (8 * i);
        pos += extra;
      }
      const n = m + 1;
      if (pos + n > block.length || o + n > length) return null;
      out.set(block.subarray(pos, pos + n), o);
      pos += n;
      o += n;
      continue;
    }
    let n: number;
    let offset: number;
    if (kind === 1) {
      if (pos >= block.length) return null;
      n = 4 + ((tag >> 2) & 7);
      offset = ((tag >> 5) << 8) | block[pos++]!;
    } else {
      const bytes = kind === 2 ? 2 : 4;
      if (pos + bytes > block.length) return null;
      n = 1 + (tag >> 2);
      offset = 0;
      for (let i = 0; i < bytes; i++) offset += block[pos + i]! * 2 ** (8 * i);
      pos += bytes;
    }
    if (offset === 0 || offset > o || o + n > length) return null;
    for (let i = 0; i < n; i++, o++) out[o] = out[o - offset]!;
  }
  return o === length ? out : null;
}
