import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { cyclingGroups, evaluation, upsertGroups } from "../eval-fixtures.ts";
import { TestNode } from "../node-fixtures.ts";

const EVALS = 100_000;

describe("a pathological filter over 100,000 evaluations", () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it("answers correctly while heartbeats sent during it are answered first", async () => {
    server = await startTestServer();
    const s = server;
    const node = new TestNode(s);
    expect((await node.register()).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);

    // 50-character job IDs of the shape that makes a backtracking engine
    // take exponential time on ^(a+)+$: a run of "a" and one character that
    // fails the match at the very end. Distinct, so no result can be reused.
    const evals = Array.from({ length: EVALS }, (_, i) =>
      evaluation({ JobID: `${"a".repeat(43)}!${String(i).padStart(6, "0")}` }),
    );
    const matching = evaluation({ JobID: "a".repeat(50) });
    await upsertGroups(s.store, [...cyclingGroups(evals), [matching]]);

    const order: string[] = [];
    const filter = encodeURIComponent('JobID matches "^(a+)+$"');
    const listing = s.call(`/v1/evaluations?namespace=*&filter=${filter}`).then(async (res) => {
      order.push("filter");
      return { status: res.status, text: await res.text() };
    });
    const counting = s.call(`/v1/evaluations/count?namespace=*&filter=${filter}`).then(async (res) => {
      order.push("count");
      return { status: res.status, text: await res.text() };
    });
    // Give the server the requests first, so the heartbeats arrive while the walks run.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const heartbeats = [0, 1, 2].map(async () => {
      const res = await node.heartbeat();
      order.push("heartbeat");
      return res.status;
    });

    expect(await Promise.all(heartbeats)).toEqual([200, 200, 200]);
    const list = await listing;
    expect(list.status, list.text).toBe(200);
    expect((JSON.parse(list.text) as { ID: string }[]).map((e) => e.ID)).toEqual([matching.ID]);
    const count = await counting;
    expect(count.status, count.text).toBe(200);
    expect((JSON.parse(count.text) as { Count: number }).Count).toBe(1);
    // The ordering fact: every heartbeat was answered before either walk finished.
    expect(order.slice(0, 3)).toEqual(["heartbeat", "heartbeat", "heartbeat"]);
  });
});
