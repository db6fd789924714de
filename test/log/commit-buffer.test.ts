import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { encodeCommit, recordsOfCommit } from "../../src/log/file/commit-buffer.ts";
import { FRAME_HEADER_SIZE, frameChecksum } from "../../src/log/file/format.ts";

describe("encodeCommit", () => {
  it("frames Buffer and Uint8Array records with each record's own length and checksum", () => {
    const records = [
      Buffer.from("first record"),
      new Uint8Array([9, 8, 7, 6, 5]),
      Buffer.from("third").subarray(1, 4),
    ];
    const frameBytes = records.reduce((n, r) => n + FRAME_HEADER_SIZE + r.length, 0);
    const { buf, records: count } = encodeCommit(
      [records.slice(0, 2), records.slice(2)],
      frameBytes,
      7,
      0,
      4096,
    );
    expect(count).toBe(3);
    let off = 0;
    for (const r of records) {
      expect(buf.readUInt32LE(off)).toBe(r.length);
      expect(buf.readUInt32LE(off + 4)).toBe(frameChecksum(r));
      off += FRAME_HEADER_SIZE + r.length;
    }
    const back = [...recordsOfCommit(buf, 7, 10)].flat();
    expect(back.map((r) => r.index)).toEqual([7, 8, 9]);
    expect(back.map((r) => [...r.bytes])).toEqual(records.map((r) => [...r]));
  });

  // Checksummed over each record as given, crc32c met Buffers and
  // Uint8Arrays: optimized on one, it deoptimized on the other in every
  // cold server. Checked in a child with V8's natives syntax.
  it("keeps crc32c optimized when a commit holds a Uint8Array record", () => {
    const script = fileURLToPath(new URL("./fixtures/crc-maps.ts", import.meta.url));
    const out = execFileSync(process.execPath, ["--allow-natives-syntax", "--import", "tsx", script], {
      encoding: "utf8",
    });
    expect(JSON.parse(out)).toEqual({ optimized: true, stillOptimized: true });
  }, 60_000);
});
