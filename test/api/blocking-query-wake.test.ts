import { EventEmitter } from "node:events";
import type { FastifyRequest } from "fastify";
import { Subject } from "rxjs";
import { describe, expect, it } from "vitest";
import { runBlocking, waitWithJitter } from "../../src/api/blocking-query.ts";
import type { ApiContext } from "../../src/api/context.ts";
import type { Watcher } from "../../src/store/watches.ts";

/** Just what runBlocking uses of the context: wake-ups it fires by hand, and closing$. */
function fakeContext() {
  const wakes = new Set<Watcher>();
  const closing$ = new Subject<"closing">();
  const ctx = {
    watches: {
      // Fires once per arming, as Watches' does; disarming forgets it.
      arm: (watcher: Watcher) => wakes.add(watcher),
      disarm: (watcher: Watcher) => wakes.delete(watcher),
    },
    closing$,
  } as unknown as ApiContext;
  return {
    ctx,
    closing$,
    /** Wake-ups registered and neither fired nor cancelled. */
    armed: () => wakes.size,
    wakeAll: () => {
      const due = [...wakes];
      wakes.clear();
      for (const watcher of due) watcher.wake();
    },
  };
}

/** A request on a connection that can close (a real emitter, so its listeners can be counted). */
function requestOnSocket(): { request: FastifyRequest; socket: EventEmitter & { destroyed: boolean } } {
  const socket = Object.assign(new EventEmitter(), { destroyed: false });
  return { request: { raw: { destroyed: true, socket } } as unknown as FastifyRequest, socket };
}

const turn = () => new Promise((r) => setImmediate(r));

/** A request whose body stream Node has already destroyed, on a connection still open. */
function requestAfterBodyRead(socketDestroyed = false): FastifyRequest {
  return {
    raw: { destroyed: true, socket: { destroyed: socketDestroyed, on() {}, off() {} } },
  } as unknown as FastifyRequest;
}

describe("runBlocking", () => {
  it("keeps waiting after Node destroyed the request stream, as long as the caller's connection is open", async () => {
    const { ctx, wakeAll } = fakeContext();
    let index = 5;
    const answer = runBlocking(
      ctx,
      requestAfterBodyRead(),
      { minIndex: 5, waitMs: 60_000 },
      ["allocs"],
      async () => {
        // A read that yields, as sliced reads do.
        await new Promise((r) => setImmediate(r));
        return { index, body: index };
      },
    );
    await new Promise((r) => setTimeout(r, 20));
    index = 6;
    wakeAll();
    expect((await answer).index).toBe(6);
  });

  it("answers at once with what it has when the caller has gone", async () => {
    const { ctx } = fakeContext();
    const answer = await runBlocking(
      ctx,
      requestAfterBodyRead(true),
      { minIndex: 5, waitMs: 60_000 },
      ["allocs"],
      () => ({
        index: 5,
        body: 5,
      }),
    );
    expect(answer.index).toBe(5);
  });

  it("runs again at each wake until the index passes, a change during a run included, and leaves nothing behind", async () => {
    const { ctx, closing$, armed, wakeAll } = fakeContext();
    const { request, socket } = requestOnSocket();
    let index = 5;
    let runs = 0;
    const answer = runBlocking(ctx, request, { minIndex: 7, waitMs: 60_000 }, ["allocs"], async () => {
      runs++;
      // The second run sees a change applied while it reads: it must not be lost.
      if (runs === 2) wakeAll();
      await turn();
      return { index, body: index };
    });
    await turn();
    await turn();
    expect(runs).toBe(1);
    index = 6;
    wakeAll();
    // Run 2 reads 6 (not past 7) and was woken during its read: run 3 follows on its own.
    for (let i = 0; i < 20 && runs < 3; i++) await turn();
    // Run 3 done reading (6 again): the loop waits.
    await turn();
    await turn();
    expect(runs).toBe(3);
    index = 8;
    wakeAll();
    expect(await answer).toEqual({ index: 8, body: 8 });
    expect(runs).toBe(4);
    expect(armed()).toBe(0);
    expect(socket.listenerCount("close")).toBe(0);
    expect(closing$.observed).toBe(false);
  });

  it("answers with what it has when the wait runs out", async () => {
    const { ctx, armed } = fakeContext();
    const { request, socket } = requestOnSocket();
    const answer = await runBlocking(ctx, request, { minIndex: 5, waitMs: 30 }, ["allocs"], () => ({
      index: 5,
      body: "as it was",
    }));
    expect(answer.body).toBe("as it was");
    expect(armed()).toBe(0);
    expect(socket.listenerCount("close")).toBe(0);
  });

  it("answers at once when the caller hangs up, or the server closes, during the wait", async () => {
    const gone = fakeContext();
    const caller = requestOnSocket();
    const hangUp = runBlocking(gone.ctx, caller.request, { minIndex: 5, waitMs: 60_000 }, ["allocs"], () => ({
      index: 5,
      body: 5,
    }));
    await turn();
    caller.socket.destroyed = true;
    caller.socket.emit("close");
    expect((await hangUp).index).toBe(5);
    expect(gone.armed()).toBe(0);

    const closing = fakeContext();
    const { request, socket } = requestOnSocket();
    const closed = runBlocking(closing.ctx, request, { minIndex: 5, waitMs: 60_000 }, ["allocs"], () => ({
      index: 5,
      body: 5,
    }));
    await turn();
    closing.closing$.complete();
    expect((await closed).index).toBe(5);
    expect(closing.armed()).toBe(0);
    expect(socket.listenerCount("close")).toBe(0);
  });

  it("answers at once when the server is closing already", async () => {
    const { ctx, closing$ } = fakeContext();
    closing$.complete();
    const { request } = requestOnSocket();
    const answer = await runBlocking(ctx, request, { minIndex: 5, waitMs: 60_000 }, ["allocs"], () => ({
      index: 5,
      body: 5,
    }));
    expect(answer.index).toBe(5);
  });

  it("fails as its read fails, at a wake too, and leaves nothing behind", async () => {
    const { ctx, closing$, armed, wakeAll } = fakeContext();
    const { request, socket } = requestOnSocket();
    let runs = 0;
    const answer = runBlocking(ctx, request, { minIndex: 5, waitMs: 60_000 }, ["allocs"], () => {
      if (++runs === 2) throw new Error("read failed");
      return { index: 5, body: 5 };
    });
    await turn();
    wakeAll();
    await expect(answer).rejects.toThrow("read failed");
    expect(armed()).toBe(0);
    expect(socket.listenerCount("close")).toBe(0);
    expect(closing$.observed).toBe(false);

    const sliced = runBlocking(
      ctx,
      requestOnSocket().request,
      { minIndex: 5, waitMs: 60_000 },
      ["allocs"],
      () => Promise.reject(new Error("sliced read failed")),
    );
    await expect(sliced).rejects.toThrow("sliced read failed");
    expect(armed()).toBe(0);
  });

  it("ends every open wait when the server closes, one subscription to closing$ while any waits", async () => {
    const { ctx, closing$, armed } = fakeContext();
    const callers = [requestOnSocket(), requestOnSocket(), requestOnSocket()];
    const waits = callers.map(({ request }, i) =>
      runBlocking(ctx, request, { minIndex: 5, waitMs: 60_000 }, ["allocs"], () => ({ index: 5, body: i })),
    );
    await turn();
    expect(armed()).toBe(3);
    // One of them answered first (its caller hung up): the others still wait.
    callers[1]!.socket.destroyed = true;
    callers[1]!.socket.emit("close");
    expect((await waits[1])!.body).toBe(1);
    expect(closing$.observed).toBe(true);
    closing$.next("closing");
    expect((await Promise.all(waits)).map((r) => r.body)).toEqual([0, 1, 2]);
    expect(armed()).toBe(0);
    expect(closing$.observed).toBe(false);
    for (const { socket } of callers) expect(socket.listenerCount("close")).toBe(0);
  });

  it("staggers a long wait by up to a sixteenth, in whole seconds, a short one by up to a sixteenth", () => {
    for (let i = 0; i < 200; i++) {
      const long = waitWithJitter(300_000);
      expect(long).toBeGreaterThanOrEqual(300_000);
      expect(long).toBeLessThanOrEqual(300_000 + 300_000 / 16);
      expect(long % 1000).toBe(0);
      const short = waitWithJitter(1_600);
      expect(short).toBeGreaterThanOrEqual(1_600);
      expect(short).toBeLessThanOrEqual(1_700);
    }
    // Whole seconds, yet spread: not all the same.
    const seen = new Set(Array.from({ length: 200 }, () => waitWithJitter(300_000)));
    expect(seen.size).toBeGreaterThan(5);
  });
});
