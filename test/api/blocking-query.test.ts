import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { placeAlloc, TestNode } from "./node-fixtures.ts";

const running: TestServer[] = [];
async function start() {
  const s = await startTestServer();
  running.push(s);
  return s;
}
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

const indexOf = async (s: TestServer, path: string) => {
  const res = await s.call(path);
  expect(res.status, path).toBe(200);
  return res.headers.get("x-nomad-index");
};

describe("X-Nomad-Index of reads", () => {
  it("is 0 for tables never written, as Nomad's api tests expect", async () => {
    const s = await start();
    for (const path of [
      "/v1/allocations",
      "/v1/evaluations",
      "/v1/deployments",
      "/v1/job/job1/allocations",
      "/v1/job/job1/evaluations",
      "/v1/nodes",
    ]) {
      expect(await indexOf(s, path), path).toBe("0");
    }
    const count = await s.call("/v1/evaluations/count");
    expect(count.headers.get("x-nomad-index")).toBe("0");
    expect(((await count.json()) as { Index: number }).Index).toBe(0);
  });

  it("is floored at 1 where Nomad floors it: namespaces and a node's allocations", async () => {
    const s = await start();
    expect(Number(await indexOf(s, "/v1/namespaces"))).toBeGreaterThanOrEqual(1);
    const missing = await s.call("/v1/namespace/nope");
    expect(missing.status).toBe(404);
    expect(Number(missing.headers.get("x-nomad-index"))).toBeGreaterThanOrEqual(1);
    expect(await indexOf(s, "/v1/node/f0000000-0000-4000-8000-000000000000/allocations")).toBe("1");
  });

  it("refuses a stale that is not a boolean, in Nomad's words, and takes a bare ?stale", async () => {
    const s = await start();
    const bad = await s.call("/v1/evaluations?stale=maybe");
    expect(bad.status).toBe(400);
    expect(await bad.text()).toBe("Expect `true` or `false` for `stale` query string parameter, got maybe");
    expect((await s.call("/v1/evaluations?stale")).status).toBe(200);
    expect((await s.call("/v1/evaluations?stale=1")).status).toBe(200);
  });
});

describe("GET /v1/node/:id/allocations", () => {
  it("answers [] for a node it does not know, as Nomad's Node.GetAllocs", async () => {
    const s = await start();
    const node = new TestNode(s);
    expect((await node.register()).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    const mine = await placeAlloc(s, { NodeID: node.id });
    const unknown = await s.call("/v1/node/f0000000-0000-4000-8000-000000000000/allocations");
    expect(unknown.status).toBe(200);
    expect(await unknown.json()).toEqual([]);
    // The allocs table has moved: an empty answer carries its index.
    expect(unknown.headers.get("x-nomad-index")).toBe(String(mine.ModifyIndex));
    // An exact ID only, as Nomad: a prefix names no node.
    expect(await (await s.call(`/v1/node/${node.id.slice(0, 8)}/allocations`)).json()).toEqual([]);
    const known = (await (await s.call(`/v1/node/${node.id}/allocations`)).json()) as { ID: string }[];
    expect(known.map((a) => a.ID)).toEqual([mine.ID]);
  });
});
