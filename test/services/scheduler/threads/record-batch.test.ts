import { MessageChannel } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { packRecords, unpackRecords } from "../../../../src/services/scheduler/threads/record-batch.ts";

const rec = (index: number, text: string) => ({ index, bytes: new TextEncoder().encode(text) });

describe("packed records", () => {
  it("carry batches of records in one buffer and come back as views into it", () => {
    const packed = packRecords([[rec(7, "seven"), rec(8, "")], [rec(9, "nine!")]]);
    expect(packed).toMatchObject({ first: 7, count: 3 });
    expect(packed.buffer.byteLength).toBe(3 * 4 + 10);
    const out = unpackRecords(packed);
    expect(out.map((r) => [r.index, new TextDecoder().decode(r.bytes)])).toEqual([
      [7, "seven"],
      [8, ""],
      [9, "nine!"],
    ]);
    expect(out.every((r) => r.bytes.buffer === packed.buffer)).toBe(true);
  });

  it("refuse a gap, which would become a gap in the replica", () => {
    expect(() => packRecords([[rec(1, "a")], [rec(3, "c")]])).toThrow(/not dense: expected 2, got 3/);
  });

  it("survive a transfer to another thread", async () => {
    const packed = packRecords([[rec(1, "x".repeat(1000))]]);
    const { port1, port2 } = new MessageChannel();
    const received = new Promise<typeof packed>((resolve) => {
      port2.once("message", (data: typeof packed) => resolve(data));
    });
    port1.postMessage(packed, [packed.buffer as ArrayBuffer]);
    const got = await received;
    port1.close();
    port2.close();
    // Transferred, not copied: the sender's buffer is detached.
    expect(packed.buffer.byteLength).toBe(0);
    expect(unpackRecords(got)[0]!.bytes.length).toBe(1000);
  });

  it("packed shared, are read by every thread they are posted to from one copy", async () => {
    const packed = packRecords([[rec(4, "four")], [rec(5, "five!")]], true);
    expect(packed.buffer).toBeInstanceOf(SharedArrayBuffer);
    const channels = [new MessageChannel(), new MessageChannel()];
    const received = channels.map(
      ({ port2 }) =>
        new Promise<typeof packed>((resolve) =>
          port2.once("message", (data: typeof packed) => resolve(data)),
        ),
    );
    for (const { port1 } of channels) port1.postMessage(packed);
    const got = await Promise.all(received);
    for (const { port1, port2 } of channels) {
      port1.close();
      port2.close();
    }
    for (const g of got)
      expect(unpackRecords(g).map((r) => [r.index, new TextDecoder().decode(r.bytes)])).toEqual([
        [4, "four"],
        [5, "five!"],
      ]);
    // Shared, not moved: the sender still holds it.
    expect(packed.buffer.byteLength).toBe(8 + 9);
  });
});
