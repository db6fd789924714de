import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { encodeGo } from "../../src/rpc/go-msgpack.ts";
import { GoValueReader } from "../../src/rpc/go-value-reader.ts";

describe("GoValueReader", () => {
  it("reads values off a stream one at a time, whatever the chunks", async () => {
    const stream = new PassThrough();
    const reader = new GoValueReader(stream);
    const header = encodeGo({ Method: "FileSystem.Logs" });
    stream.write(header.subarray(0, 3));
    const first = reader.next();
    stream.write(Buffer.concat([header.subarray(3), encodeGo({ Error: "" }), encodeGo([1, 2])]));
    expect(await first).toEqual({ Method: "FileSystem.Logs" });
    expect(await reader.next()).toEqual({ Error: "" });
    expect(await reader.next()).toEqual([1, 2]);
    stream.end();
    expect(await reader.next()).toBeUndefined();
  });

  it("refuses a stream that ends in the middle of a value", async () => {
    const stream = new PassThrough();
    const reader = new GoValueReader(stream);
    const pending = reader.next();
    stream.end(Buffer.from([0xa5, 0x61, 0x62]));
    await expect(pending).rejects.toThrow(/ended before a complete msgpack value/);
  });

  it("rejects with the stream's error", async () => {
    const stream = new PassThrough();
    const reader = new GoValueReader(stream);
    const pending = reader.next();
    stream.destroy(new Error("reset"));
    await expect(pending).rejects.toThrow("reset");
  });
});
