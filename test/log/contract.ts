import { concatMap, firstValueFrom, take, toArray } from "rxjs";
import { afterEach, describe, expect, it } from "vitest";
import type { EventLog, LogRecord } from "../../src/log/event-log.ts";

/**
 * How a backend under test is opened. `reopen` opens the same log again after
 * `close` (a restart); backends without persistence leave it out and the
 * restart cases are skipped for them, saying so.
 */
export interface LogUnderTest {
  open(): Promise<EventLog>;
  reopen?: () => Promise<EventLog>;
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const payload = (s: string) => enc.encode(s);
const text = (r: LogRecord) => dec.decode(r.bytes);

async function readAll(log: EventLog, from = 1): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const batch of log.read(from, { maxBatch: 37 })) out.push(...batch);
  return out;
}

async function tailUntil(log: EventLog, from: number, count: number): Promise<LogRecord[]> {
  return firstValueFrom(
    log.tail(from).pipe(
      concatMap((batch) => batch),
      take(count),
      toArray(),
    ),
  );
}

/** The contract every EventLog backend must pass. */
export function eventLogContract(name: string, backend: () => LogUnderTest): void {
  describe(`EventLog contract: ${name}`, () => {
    const open: EventLog[] = [];
    let current: LogUnderTest;
    const start = async () => {
      current = backend();
      const log = await current.open();
      open.push(log);
      return log;
    };
    const restart = async (log: EventLog) => {
      await log.close();
      const again = await current.reopen!();
      open.push(again);
      return again;
    };
    afterEach(async () => {
      for (const log of open.splice(0)) await log.close().catch(() => undefined);
    });

    it("starts empty and numbers records from 1 in append order", async () => {
      const log = await start();
      expect(log.lastIndex()).toBe(0);
      const a = await log.append([payload("a"), payload("b")]);
      const b = await log.append([payload("c")]);
      expect(a).toEqual({ first: 1, last: 2 });
      expect(b).toEqual({ first: 3, last: 3 });
      expect(log.lastIndex()).toBe(3);
      const all = await readAll(log);
      expect(all.map((r) => r.index)).toEqual([1, 2, 3]);
      expect(all.map(text)).toEqual(["a", "b", "c"]);
    });

    it("refuses an empty batch", async () => {
      const log = await start();
      await expect(log.append([])).rejects.toThrow(/empty/);
      expect(log.lastIndex()).toBe(0);
    });

    it("keeps bytes exactly, including empty and large records", async () => {
      const log = await start();
      const big = new Uint8Array(300_000).map((_, i) => (i * 31) & 0xff);
      await log.append([new Uint8Array(0), big, payload("x")]);
      const all = await readAll(log);
      expect(all[0]!.bytes.length).toBe(0);
      expect(Buffer.from(all[1]!.bytes).equals(Buffer.from(big))).toBe(true);
      expect(text(all[2]!)).toBe("x");
    });

    it("resumes reading from any index, and stops at untilIndex", async () => {
      const log = await start();
      for (let i = 0; i < 20; i++)
        await log.append(Array.from({ length: 25 }, (_, j) => payload(`${i * 25 + j + 1}`)));
      for (const from of [1, 2, 24, 25, 26, 250, 499, 500]) {
        const got = await readAll(log, from);
        expect(got.length).toBe(500 - from + 1);
        expect(got.every((r, k) => r.index === from + k && text(r) === String(from + k))).toBe(true);
      }
      expect(await readAll(log, 501)).toEqual([]);
      const bounded: LogRecord[] = [];
      for await (const b of log.read(10, { untilIndex: 19, maxBatch: 4 })) {
        expect(b.length).toBeLessThanOrEqual(4);
        bounded.push(...b);
      }
      expect(bounded.map((r) => r.index)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    });

    it("gives concurrent appenders disjoint, contiguous runs in one total order", async () => {
      const log = await start();
      const writers = 16;
      const perWriter = 40;
      const results = await Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          const mine = [];
          for (let k = 0; k < perWriter; k++) {
            const size = 1 + (k % 3);
            const r = await log.append(Array.from({ length: size }, (_, s) => payload(`w${w}-${k}-${s}`)));
            expect(r.last - r.first + 1).toBe(size);
            mine.push(r);
          }
          return mine;
        }),
      );
      const all = await readAll(log);
      expect(all.map((r) => r.index)).toEqual(all.map((_, i) => i + 1));
      for (const [w, mine] of results.entries()) {
        let previous = 0;
        for (const [k, r] of mine.entries()) {
          expect(r.first).toBeGreaterThan(previous);
          previous = r.last;
          for (let i = r.first; i <= r.last; i++) expect(text(all[i - 1]!)).toBe(`w${w}-${k}-${i - r.first}`);
        }
      }
    });

    it("tails the backlog first, then live appends, without gaps or repeats", async () => {
      const log = await start();
      await log.append([payload("1"), payload("2"), payload("3")]);
      const tailed = tailUntil(log, 2, 6);
      await log.append([payload("4")]);
      await log.append([payload("5"), payload("6"), payload("7")]);
      const got = await tailed;
      expect(got.map((r) => r.index)).toEqual([2, 3, 4, 5, 6, 7]);
      expect(got.map(text)).toEqual(["2", "3", "4", "5", "6", "7"]);
    });

    it("tails from an index not yet written", async () => {
      const log = await start();
      const tailed = tailUntil(log, 3, 2);
      await log.append([payload("1"), payload("2")]);
      await log.append([payload("3"), payload("4")]);
      expect((await tailed).map(text)).toEqual(["3", "4"]);
    });

    it("keeps every resolved append across a restart, and tails after it", async (ctx) => {
      const log = await start();
      if (!current.reopen) {
        ctx.skip(`${name} keeps nothing across a restart`);
        return;
      }
      const resolved = await Promise.all(
        Array.from({ length: 50 }, (_, i) => log.append([payload(`r${i}`)])),
      );
      const again = await restart(log);
      expect(again.lastIndex()).toBe(50);
      const all = await readAll(again);
      for (const [i, r] of resolved.entries()) expect(text(all[r.first - 1]!)).toBe(`r${i}`);
      const tailed = tailUntil(again, 49, 4);
      await again.append([payload("after-1"), payload("after-2")]);
      expect((await tailed).map((r) => r.index)).toEqual([49, 50, 51, 52]);
      const next = await again.append([payload("after-3")]);
      expect(next.first).toBe(53);
    });
  });
}
