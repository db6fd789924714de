import { afterEach, describe, expect, it } from "vitest";
import { EventLoopLag } from "../../src/api/load-shedding.ts";
import { eventually } from "../cluster/eventually.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { TestNode } from "./node-fixtures.ts";

/** Holds this process's event loop (the test server's too) for `ms`. */
function stall(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy on purpose: this is the lag under test
  }
}

const turn = () => new Promise((resolve) => setTimeout(resolve, 30));

describe("EventLoopLag", () => {
  it("reports a stall of the loop, and forgets it after a quiet window", async () => {
    const lag = new EventLoopLag(200);
    try {
      await turn();
      stall(300);
      await turn();
      expect(lag.lagMs).toBeGreaterThanOrEqual(250);
      await eventually(() => expect(lag.lagMs).toBeLessThan(250), 5_000);
    } finally {
      lag.close();
    }
  });
});

describe("shedding expensive reads while the event loop lags", () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it("answers lists 429 with Retry-After, while heartbeats and point reads are served", async () => {
    server = await startTestServer({ args: ["--shed-reads-after-lag", "100ms"] });
    const s = server;
    const node = new TestNode(s);
    expect((await node.register()).status).toBe(200);
    await turn();
    stall(400);
    await turn();

    const shed = await s.call("/v1/evaluations?namespace=*");
    expect(shed.status).toBe(429);
    expect(shed.headers.get("retry-after")).toBe("1");
    expect(await shed.text()).toMatch(/server overloaded \(event loop lag \d+ ms\): retry later/);
    expect((await s.call("/v1/nodes")).status).toBe(429);
    // What keeps the cluster alive is never shed.
    expect((await node.heartbeat()).status).toBe(200);
    expect((await s.call(`/v1/node/${node.id}`)).status).toBe(200);
    expect((await s.call("/v1/status/leader")).status).toBe(200);

    // Once the loop is quiet for a window, lists are served again.
    await eventually(
      async () => expect((await s.call("/v1/evaluations?namespace=*")).status).toBe(200),
      10_000,
    );
    const metrics = (await (await s.call("/v1/metrics")).json()) as { Counters: { Name: string }[] };
    expect(metrics.Counters.map((c) => c.Name)).toContain("chronomad.http.shed");
  });

  it("bounds event-stream subscribers: one more than the maximum is answered 429", async () => {
    server = await startTestServer({ args: ["--event-stream-max-subscribers", "2"] });
    const s = server;
    const aborts = [new AbortController(), new AbortController()];
    const streams = await Promise.all(aborts.map((a) => s.call("/v1/event/stream", { signal: a.signal })));
    expect(streams.map((r) => r.status)).toEqual([200, 200]);
    const third = await s.call("/v1/event/stream");
    expect(third.status).toBe(429);
    expect(await third.text()).toMatch(/too many event stream subscribers \(2\)/);
    aborts[0]!.abort();
    await eventually(async () => {
      const again = await s.call("/v1/event/stream?index=0", { signal: AbortSignal.timeout(2_000) });
      expect(again.status).toBe(200);
      await again.body?.cancel();
    }, 10_000);
    aborts[1]!.abort();
  });
});
