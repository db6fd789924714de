import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { evaluation, upsertGroups } from "./eval-fixtures.ts";
import { placeAlloc, TestNode } from "./node-fixtures.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

async function cluster() {
  const s = await startTestServer();
  running.push(s);
  const node = new TestNode(s);
  expect((await node.register()).status).toBe(200);
  expect((await node.heartbeat()).status).toBe(200);
  const first = await placeAlloc(s, { NodeID: node.id });
  const second = await placeAlloc(s, { NodeID: node.id });
  const e = evaluation({ Status: "complete" });
  await upsertGroups(s.store, [[e]]);
  return { s, node, allocs: [first.ID, second.ID], evalID: e.ID };
}

const json = async (s: TestServer, path: string) => {
  const res = await s.call(path);
  expect(res.status, `${path}: ${res.status}`).toBe(200);
  return res.json() as Promise<Record<string, unknown>[] & Record<string, unknown>>;
};

describe("query booleans, read with Go's strconv.ParseBool", () => {
  it("take every spelling Nomad's ParseBool takes, on every endpoint", async () => {
    const { s, node, allocs, evalID } = await cluster();
    const reversed = (await json(s, "/v1/allocations?reverse=1")).map((a) => a.ID);
    expect(reversed).toEqual([...allocs].reverse());
    expect((await json(s, "/v1/allocations?reverse=F")).map((a) => a.ID)).toEqual(allocs);
    const withResources = await json(s, "/v1/allocations?resources=TRUE&task_states=0");
    expect(withResources[0]).toHaveProperty("AllocatedResources");
    expect(withResources[0]).not.toHaveProperty("TaskStates");
    const nodes = await json(s, "/v1/nodes?os=T");
    expect((nodes[0] as { Attributes?: unknown }).Attributes).toEqual({ "os.name": "ubuntu" });
    const withRelated = await json(s, `/v1/evaluation/${evalID}?related=t`);
    expect(withRelated.RelatedEvals).toEqual([]);
    expect((await json(s, `/v1/evaluation/${evalID}?related=False`)).RelatedEvals).toBeNull();
    expect((await json(s, "/v1/job/web/allocations?all=1")).map((a) => a.ID).sort()).toEqual(
      [...allocs].sort(),
    );
    expect(await json(s, `/v1/node/${node.id}/allocations`)).toHaveLength(2);
  });

  it("refuse any other value with a 400 naming the parameter", async () => {
    const { s, allocs, evalID } = await cluster();
    const cases: [string, string][] = [
      ["/v1/allocations?reverse=yes", "reverse"],
      ["/v1/allocations?resources=yes", "resources"],
      ["/v1/allocations?task_states=no", "task_states"],
      ["/v1/nodes?os=y", "os"],
      ["/v1/nodes?resources=2", "resources"],
      [`/v1/evaluation/${evalID}?related=yes`, "related"],
      ["/v1/jobs?meta=yes", "meta"],
      ["/v1/job/web/allocations?all=yes", "all"],
      ["/v1/evaluations?reverse=on", "reverse"],
    ];
    for (const [path, name] of cases) {
      const res = await s.call(path);
      expect(res.status, path).toBe(400);
      expect(await res.text()).toMatch(
        new RegExp(`^Failed to parse value of "${name}" \\(.*\\) as a bool: `),
      );
    }
    const stop = await s.call(`/v1/allocation/${allocs[0]}/stop?no_shutdown_delay=maybe`, { method: "PUT" });
    expect(stop.status).toBe(400);
    expect(await stop.text()).toMatch(/^Failed to parse value of "no_shutdown_delay" \(maybe\) as a bool/);
  });
});
