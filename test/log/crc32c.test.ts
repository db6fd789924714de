import { describe, expect, it } from "vitest";
import { crc32c } from "../../src/log/file/crc32c.ts";

/** Bit-at-a-time CRC-32C: slow, obviously right, the reference for the table-driven one. */
function reference(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of data) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

describe("crc32c", () => {
  it("matches the published check values", () => {
    expect(crc32c(new TextEncoder().encode("123456789"))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
    expect(crc32c(new Uint8Array(0))).toBe(0);
  });

  it("matches the bitwise reference on every length and alignment, and continues across pieces", () => {
    const data = new Uint8Array(300).map((_, i) => (i * 151 + 7) & 0xff);
    for (let start = 0; start < 9; start++) {
      for (let end = start; end <= data.length; end += 13) {
        expect(crc32c(data, start, end)).toBe(reference(data.subarray(start, end)));
      }
    }
    const whole = crc32c(data);
    expect(crc32c(data, 123, data.length, crc32c(data, 0, 123))).toBe(whole);
  });
});
