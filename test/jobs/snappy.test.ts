import { describe, expect, it } from "vitest";
import { snappyDecode, snappyEncodeLiteral } from "../../src/jobs/snappy.ts";

describe("snappy block format (a dispatch payload as Nomad keeps it)", () => {
  it("writes literals any snappy decoder reads back, at every literal length class", () => {
    for (const n of [0, 1, 59, 60, 61, 255, 256, 257, 16_384, 70_000]) {
      const input = Buffer.alloc(n, 0).map((_, i) => (i * 31) % 251);
      const block = snappyEncodeLiteral(input);
      expect(snappyDecode(block)?.equals(input)).toBe(true);
    }
    // Go's snappy.Encode(nil, nil): the empty payload of a dispatch without one.
    expect(snappyEncodeLiteral(Buffer.alloc(0)).toString("base64")).toBe("AA==");
  });

  it("reads copies, as Go's encoder writes for repeated bytes, and refuses what is not a block", () => {
    // "abcd" then a 1-byte-offset copy of 8 bytes from 4 back: "abcdabcdabcd".
    const block = Buffer.from([12, 3 << 2, ...Buffer.from("abcd"), 1 | ((8 - 4) << 2), 4]);
    expect(snappyDecode(block)?.toString()).toBe("abcdabcdabcd");
    expect(snappyDecode(Buffer.from([10, 0, 0x61]))).toBeNull();
  });
});
