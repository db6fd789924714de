import type { FileHandle } from "node:fs/promises";
import { afterAll, describe, expect, it } from "vitest";
import type { AppendResult, LogRecord } from "../../src/log/event-log.ts";
import { openFileLog } from "../../src/log/file/index.ts";
import { tempDirs } from "./temp-dirs.ts";

const dirs = tempDirs("file-log-pipeline");
afterAll(() => dirs.cleanup());

const enc = new TextEncoder();
const dec = new TextDecoder();
const record = (text: string) => enc.encode(text);

/** A log whose fdatasyncs wait until the test lets each one finish (or fail). */
async function heldLog() {
  const log = await openFileLog(await dirs.make());
  // The first append makes the segment (and its handle); its sync is not held.
  await log.append([record("first")]);
  const handle = (log as unknown as { activeHandle: FileHandle }).activeHandle;
  const held: { resolve: () => void; reject: (e: Error) => void }[] = [];
  const sync = handle.datasync.bind(handle);
  handle.datasync = () =>
    new Promise<void>((resolve, reject) => {
      held.push({ resolve: () => sync().then(resolve, reject), reject });
    });
  const writes = { count: 0 };
  const write = handle.write.bind(handle) as (...args: unknown[]) => Promise<unknown>;
  (handle as unknown as { write: (...args: unknown[]) => Promise<unknown> }).write = (...args) => {
    writes.count++;
    return write(...args);
  };
  // close() syncs the segment once more: that sync is not held.
  const restore = () => {
    Reflect.deleteProperty(handle, "datasync");
    Reflect.deleteProperty(handle, "write");
  };
  return { log, held, writes, restore };
}

/** Lets microtasks and the thread pool's writes run. */
const settle = () => new Promise((r) => setTimeout(r, 20));

describe("file log group commits", () => {
  it("writes the next group before it answers the durable one, one write in flight at a time", async () => {
    const { log, held, writes, restore } = await heldLog();
    const tailed: string[] = [];
    const tail = log.tail(2).subscribe((batch: LogRecord[]) => {
      for (const r of batch) tailed.push(`${r.index}:${dec.decode(r.bytes)}`);
    });
    const writesWhenAnswered: number[] = [];
    const a = log.append([record("a1"), record("a2")]).then((r: AppendResult) => {
      writesWhenAnswered.push(writes.count);
      return r;
    });
    await settle();
    const b = log.append([record("b1")]);
    const c = log.append([record("c1")]);
    await settle();
    // b and c wait behind a's write, and then go out together.
    expect(writes.count).toBe(1);
    expect(log.lastIndex()).toBe(1);
    held[0]!.resolve();
    await expect(a).resolves.toEqual({ first: 2, last: 3 });
    // When a's appender heard back, the write of b and c was already out.
    expect(writesWhenAnswered).toEqual([2]);
    expect(log.lastIndex()).toBe(3);
    await settle();
    expect(held).toHaveLength(2);
    held[1]!.resolve();
    await expect(b).resolves.toEqual({ first: 4, last: 4 });
    await expect(c).resolves.toEqual({ first: 5, last: 5 });
    expect(tailed).toEqual(["2:a1", "3:a2", "4:b1", "5:c1"]);
    tail.unsubscribe();
    restore();
    await log.close();

    const reopened = await openFileLog(log.url.slice("file:".length));
    expect(reopened.lastIndex()).toBe(5);
    await reopened.close();
  });

  it("commits an append made while a group is being published (a tail subscriber that writes)", async () => {
    const log = await openFileLog(await dirs.make());
    const echoed: Promise<AppendResult>[] = [];
    const sub = log.tail(1).subscribe((batch) => {
      for (const r of batch) {
        const text = dec.decode(r.bytes);
        if (!text.startsWith("echo")) echoed.push(log.append([record(`echo ${text}`)]));
      }
    });
    await log.append([record("one")]);
    expect(echoed).toHaveLength(1);
    await expect(echoed[0]).resolves.toEqual({ first: 2, last: 2 });
    sub.unsubscribe();
    await log.close();
  });

  it("rejects a failed group and everything after it; the group before it stays written", async () => {
    const { log, held, restore } = await heldLog();
    let tailError: Error | undefined;
    const tailed: number[] = [];
    log.tail(2).subscribe({
      next: (batch) => tailed.push(...batch.map((r) => r.index)),
      error: (err: Error) => {
        tailError = err;
      },
    });
    const a = log.append([record("a")]);
    await settle();
    const b = log.append([record("b")]);
    await settle();
    held[0]!.resolve();
    await expect(a).resolves.toEqual({ first: 2, last: 2 });
    await settle();
    const c = log.append([record("c")]);
    held[1]!.reject(new Error("EIO"));
    await expect(b).rejects.toThrow(/EIO.*refuses appends/);
    await expect(c).rejects.toThrow(/EIO/);
    await expect(log.append([record("d")])).rejects.toThrow(/refuses appends/);
    expect(log.lastIndex()).toBe(2);
    expect(tailed).toEqual([2]);
    expect(tailError?.message).toMatch(/EIO/);
    restore();
    await log.close();
  });

  it("rolls into new segments while appends keep arriving: no gap, no repeat, the same after reopening", async () => {
    const log = await openFileLog(await dirs.make(), { segmentBytes: 256 });
    const pending: Promise<AppendResult>[] = [];
    for (let i = 0; i < 300; i++) {
      pending.push(log.append([record(`r${i}-${"x".repeat(i % 40)}`)]));
      // Yielding to I/O now and then: appends arrive while a write is in flight, across roll-overs.
      if (i % 5 === 0) await new Promise((r) => setImmediate(r));
    }
    const results = await Promise.all(pending);
    const indexes = results.map((r) => r.first).sort((x, y) => x - y);
    expect(indexes).toEqual(Array.from({ length: indexes.length }, (_, i) => i + 1));
    const last = log.lastIndex();
    const seen: number[] = [];
    for await (const batch of log.read(1)) seen.push(...batch.map((r) => r.index));
    expect(seen).toEqual(Array.from({ length: last }, (_, i) => i + 1));
    await log.close();
    const reopened = await openFileLog(log.url.slice("file:".length), { segmentBytes: 256 });
    expect(reopened.lastIndex()).toBe(last);
    const again: number[] = [];
    for await (const batch of reopened.read(1)) again.push(...batch.map((r) => r.index));
    expect(again).toEqual(seen);
    await reopened.close();
  });
});
