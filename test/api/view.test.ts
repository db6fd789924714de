import { afterEach, describe, expect, it } from "vitest";
import { VirtualClock } from "../../src/util/clock.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { evaluation, upsertGroups } from "./eval-fixtures.ts";
import { placeAlloc, TestNode } from "./node-fixtures.ts";

describe("time travel: ?at_index=N", () => {
  let s: TestServer | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  const put = async (name: string) =>
    Number(
      (await s!.call(`/v1/namespace/${name}`, { method: "PUT", body: "{}" })).headers.get("x-nomad-index"),
    );
  const names = async (path: string) =>
    ((await (await s!.call(path)).json()) as { Name: string }[]).map((n) => n.Name);

  it("answers reads with the state as of the index, and says so", async () => {
    // Snapshots every 2 records, so past states start from a snapshot and replay the rest.
    s = await startTestServer({ args: ["--snapshot-every", "2"] });
    const a = await put("a");
    const b = await put("b");
    const deleted = Number(
      (await s.call("/v1/namespace/a", { method: "DELETE" })).headers.get("x-nomad-index"),
    );
    expect(await names(`/v1/namespaces?at_index=${a}`)).toEqual(["a", "default"]);
    expect(await names(`/v1/namespaces?at_index=${b}`)).toEqual(["a", "b", "default"]);
    expect(await names(`/v1/namespaces?at_index=${deleted}`)).toEqual(["b", "default"]);
    expect(await names("/v1/namespaces")).toEqual(["b", "default"]);

    const past = await s.call(`/v1/namespace/a?at_index=${b}`);
    expect(past.status).toBe(200);
    expect(past.headers.get("x-chronomad-at-index")).toBe(String(b));
    expect(past.headers.get("x-nomad-index")).toBe(String(a));
    expect((await s.call("/v1/namespace/a")).status).toBe(404);
    expect((await s.call("/v1/namespace/a")).headers.get("x-chronomad-at-index")).toBeNull();
    // A blocking query on the past answers at once instead of waiting.
    expect((await s.call(`/v1/namespaces?at_index=${a}&index=${deleted}&wait=5m`)).status).toBe(200);
  });

  it("shows a node and its allocations as they were", async () => {
    const clock = new VirtualClock();
    s = await startTestServer({ deps: { clock } });
    const node = new TestNode(s);
    const registered = Number((await node.register()).body.Index);
    await node.heartbeat();
    const alloc = await placeAlloc(s, { NodeID: node.id });
    const past = async (path: string) => (await (await s!.call(path)).json()) as Record<string, unknown>;
    expect((await past(`/v1/node/${node.id}?at_index=${registered}`)).Status).toBe("initializing");
    expect((await past(`/v1/node/${node.id}`)).Status).toBe("ready");
    const before = (await past(
      `/v1/node/${node.id}/allocations?at_index=${registered}`,
    )) as unknown as unknown[];
    expect(before).toEqual([]);
    const now = (await past(`/v1/node/${node.id}/allocations`)) as unknown as { ID: string }[];
    expect(now.map((a) => a.ID)).toEqual([alloc.ID]);
    expect((await s.call(`/v1/allocation/${alloc.ID}?at_index=${registered}`)).status).toBe(404);
  });

  it("shows evaluations, their count and the scheduler configuration as they were", async () => {
    s = await startTestServer();
    const first = evaluation({ Status: "blocked" });
    const before = await upsertGroups(s.store, [[first]]);
    const paused = await s.call("/v1/operator/scheduler/configuration", {
      method: "PUT",
      body: JSON.stringify({ SchedulerAlgorithm: "spread", PauseEvalBroker: true }),
    });
    expect(paused.status).toBe(200);
    await upsertGroups(s.store, [[evaluation({ Status: "blocked" })]]);
    const read = async (path: string) => {
      const res = await s!.call(path);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-chronomad-at-index")).toBe(String(before));
      return res.json();
    };

    const listed = (await read(`/v1/evaluations?at_index=${before}`)) as { ID: string }[];
    expect(listed.map((e) => e.ID)).toEqual([first.ID]);
    expect(await read(`/v1/evaluations/count?filter=Status==blocked&at_index=${before}`)).toMatchObject({
      Count: 1,
      Index: before,
    });
    expect(((await (await s.call("/v1/evaluations/count")).json()) as { Count: number }).Count).toBe(2);
    expect(await read(`/v1/operator/scheduler/configuration?at_index=${before}`)).toMatchObject({
      SchedulerConfig: { SchedulerAlgorithm: "binpack", PauseEvalBroker: false },
    });
    const later = await upsertGroups(s.store, [[{ ...first, Status: "complete" }]]);
    expect(await read(`/v1/evaluation/${first.ID}?at_index=${before}`)).toMatchObject({ Status: "blocked" });
    expect(
      ((await (await s.call(`/v1/evaluation/${first.ID}`)).json()) as { ModifyIndex: number }).ModifyIndex,
    ).toBe(later);
  });

  it("refuses an index it cannot answer for, and writes", async () => {
    s = await startTestServer();
    const last = s.log.lastIndex();
    const ahead = await s.call(`/v1/namespaces?at_index=${last + 10}`);
    expect(ahead.status).toBe(400);
    expect(await ahead.text()).toMatch(/ahead of the log/);
    expect((await s.call("/v1/namespaces?at_index=-3")).status).toBe(400);
    const write = await s.call("/v1/namespace/x?at_index=1", { method: "PUT", body: "{}" });
    expect(write.status).toBe(400);
    expect(await write.text()).toMatch(/only for reads/);
    expect(s.log.lastIndex()).toBe(last);
  });
});
