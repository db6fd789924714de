import { describe, expect, it } from "vitest";
import type { LogRecord } from "../../../../src/log/event-log.ts";
import { ForwardedLog } from "../../../../src/services/scheduler/threads/forwarded-log.ts";

const run = (from: number, to: number): LogRecord[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({ index: from + i, bytes: new Uint8Array([from + i]) }));

function portLog(startIndex: number) {
  const calls: string[] = [];
  const log = new ForwardedLog(startIndex, {
    follow: (from) => calls.push(`follow ${from}`),
    more: () => calls.push("more"),
  });
  return { log, calls };
}

describe("the forwarded log", () => {
  it("pulls runs up to the start index for read(), then hands the rest to tail()", async () => {
    const { log, calls } = portLog(5);
    const reading = (async () => {
      const seen: number[] = [];
      for await (const b of log.read(3, { untilIndex: 5 })) seen.push(...b.map((r) => r.index));
      return seen;
    })();
    // It asks to follow from where the reader starts, and keeps two runs requested.
    expect(calls).toEqual(["follow 3", "more", "more"]);
    log.receive(run(3, 4), false);
    log.receive(run(5, 7), false);
    expect(await reading).toEqual([3, 4, 5]);
    const tailed: number[] = [];
    log.tail(6).subscribe((b) => tailed.push(...b.map((r) => r.index)));
    expect(tailed).toEqual([6, 7]);
    log.goLive();
    log.receive(run(8, 8), true);
    expect(tailed).toEqual([6, 7, 8]);
    expect(log.lastIndex()).toBe(8);
  });

  it("holds records back from the store while a computation reads its tables", () => {
    const { log } = portLog(0);
    const tailed: number[] = [];
    log.tail(1).subscribe((b) => tailed.push(...b.map((r) => r.index)));
    log.goLive();
    log.receive(run(1, 2), true);
    log.hold();
    log.receive(run(3, 4), true);
    expect(tailed).toEqual([1, 2]);
    log.release();
    expect(tailed).toEqual([1, 2, 3, 4]);
  });

  it("never appends", async () => {
    await expect(portLog(0).log.append([new Uint8Array(1)])).rejects.toThrow(/never appends/);
  });
});
