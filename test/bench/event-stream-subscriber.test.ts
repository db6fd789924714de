import { Agent, createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { RetryPolicy } from "../../src/bench/event-stream-retry.ts";
import { StreamRefused, StreamSubscriber } from "../../src/bench/event-stream-subscriber.ts";

/**
 * A stand-in for `/v1/event/stream`: the first answers are what `refuse`
 * makes of them (a 429 from a lagging server, say), then a stream that
 * subscribes (`{}`) and sends one frame.
 */
async function streamServer(refusals: number, refuse: (res: ServerResponse) => void) {
  let requests = 0;
  const connections = new Set<number>();
  const server: Server = createServer((req, res) => {
    requests++;
    connections.add(req.socket.remotePort!);
    if (requests <= refusals) return refuse(res);
    res.writeHead(200, { "Content-Type": "application/json" });
    res.write("{}\n");
    res.write(`${JSON.stringify({ Index: 7, Events: [{}, {}] })}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests: () => requests,
    connections: () => connections.size,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const shed = (retryAfter?: string) => (res: ServerResponse) => {
  res.writeHead(429, {
    "Content-Type": "text/plain; charset=utf-8",
    ...(retryAfter === undefined ? {} : { "Retry-After": retryAfter }),
  });
  res.end("server overloaded (event loop lag 612 ms): retry later");
};

const quick: RetryPolicy = { tries: 4, baseMs: 20, maxMs: 2_000 };

describe("StreamSubscriber.open when the server sheds load", () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0)) await c();
  });
  const setUp = async (refusals: number, refuse: (res: ServerResponse) => void) => {
    const server = await streamServer(refusals, refuse);
    const agent = new Agent({ keepAlive: true });
    cleanup.push(server.close, () => agent.destroy());
    return { server, agent };
  };

  it("tries a 429 again, counts it, and then reads the stream", async () => {
    const { server, agent } = await setUp(2, shed("0"));
    const s = await StreamSubscriber.open("subscriber 0", server.url, agent, 0, quick);
    cleanup.push(() => s.close());
    await s.until(7);
    expect(s.retries).toBe(2);
    expect(s.received).toEqual({ indexes: [7], events: [2] });
    expect(server.requests()).toBe(3);
    // The refusals were read to their end: the retries reused the connection.
    expect(server.connections()).toBe(1);
  });

  it("waits what Retry-After asks before trying again", async () => {
    const { server, agent } = await setUp(1, shed("1"));
    const started = performance.now();
    const s = await StreamSubscriber.open("subscriber 0", server.url, agent, 0, quick);
    cleanup.push(() => s.close());
    expect(performance.now() - started).toBeGreaterThanOrEqual(990);
    expect(s.retries).toBe(1);
  });

  it("backs off without Retry-After", async () => {
    const { server, agent } = await setUp(3, shed());
    const started = performance.now();
    const s = await StreamSubscriber.open("subscriber 0", server.url, agent, 0, quick);
    cleanup.push(() => s.close());
    // 20 + 40 + 80 ms at least.
    expect(performance.now() - started).toBeGreaterThanOrEqual(135);
    expect(s.retries).toBe(3);
  });

  it("gives up after its tries, or when asked to wait longer than it would", async () => {
    const always = await setUp(Number.POSITIVE_INFINITY, shed("0"));
    await expect(
      StreamSubscriber.open("subscriber 0", always.server.url, always.agent, 0, quick),
    ).rejects.toThrow(
      "subscriber 0: the stream answered 429 (Retry-After: 0) to try 4: gave up after 4 tries",
    );
    expect(always.server.requests()).toBe(4);
    const long = await setUp(1, shed("60"));
    const err = await StreamSubscriber.open("subscriber 1", long.server.url, long.agent, 0, quick).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StreamRefused);
    expect((err as StreamRefused).message).toBe(
      "subscriber 1: the stream answered 429 (Retry-After: 60) to try 1: a wait longer than 2000 ms",
    );
    expect((err as StreamRefused).retryAfter).toBe("60");
    expect(long.server.requests()).toBe(1);
  });

  it("does not retry another refusal", async () => {
    const { server, agent } = await setUp(1, (res) => {
      res.writeHead(503, { "Retry-After": "0" });
      res.end("no leader");
    });
    await expect(StreamSubscriber.open("subscriber 0", server.url, agent, 0, quick)).rejects.toThrow(
      "subscriber 0: the stream answered 503",
    );
    expect(server.requests()).toBe(1);
  });
});
