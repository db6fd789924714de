import type { FastifyRequest } from "fastify";
import { Subject } from "rxjs";
import { describe, expect, it } from "vitest";
import { runBlocking } from "../../src/api/blocking-query.ts";
import type { ApiContext } from "../../src/api/context.ts";
import type { Watch } from "../../src/store/watches.ts";

/** Just what runBlocking uses of the context: wake-ups it fires by hand, and closing$. */
function fakeContext() {
  const wakes: (() => void)[] = [];
  const ctx = {
    watches: {
      once: (_w: readonly Watch[], wake: () => void) => {
        wakes.push(wake);
        return () => {};
      },
    },
    closing$: new Subject<void>(),
  } as unknown as ApiContext;
  return {
    ctx,
    wakeAll: () => {
      for (const wake of wakes.splice(0)) wake();
    },
  };
}

/** A request whose body stream Node has already destroyed, on a connection still open. */
function requestAfterBodyRead(socketDestroyed = false): FastifyRequest {
  return {
    raw: { destroyed: true, socket: { destroyed: socketDestroyed, once() {}, off() {} } },
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
});
