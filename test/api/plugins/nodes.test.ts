import { afterEach, describe, expect, it } from "vitest";
import type { EvaluationRow } from "../../../projections/evals.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { nodeRow, placeAlloc, TestNode } from "../node-fixtures.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

async function cluster(ids: string[] = []) {
  const clock = new VirtualClock();
  const s = await startTestServer({ deps: { clock } });
  running.push(s);
  const nodes: TestNode[] = [];
  for (const id of ids) {
    const n = new TestNode(s, { id });
    expect((await n.register({ NodeClass: id.startsWith("a") ? "web" : "db" })).status).toBe(200);
    nodes.push(n);
  }
  return { s, nodes, clock };
}

const put = (s: TestServer, path: string, body?: unknown) =>
  s.call(path, { method: "PUT", body: body === undefined ? undefined : JSON.stringify(body) });

const A = "aaaa1111-0000-4000-8000-000000000001";
const A2 = "aaaa2222-0000-4000-8000-000000000002";
const B = "bbbb1111-0000-4000-8000-000000000003";

describe("/v1/nodes", () => {
  it("lists NodeListStubs by ID with prefix, filter, pagination, resources and os", async () => {
    const { s } = await cluster([B, A2, A]);
    const list = await s.call("/v1/nodes");
    expect(list.headers.get("x-nomad-index")).toBe(String(nodeRow(s, A).CreateIndex));
    const stubs = (await list.json()) as Record<string, unknown>[];
    expect(stubs.map((n) => n.ID)).toEqual([A, A2, B]);
    expect(stubs[0]).toEqual({
      Address: "10.0.0.7",
      ID: A,
      Datacenter: "dc1",
      Name: `client-${A.slice(0, 8)}`,
      NodeClass: "web",
      NodePool: "default",
      Version: "1.5.6",
      Drain: false,
      SchedulingEligibility: "eligible",
      Status: "initializing",
      StatusDescription: "",
      Drivers: null,
      HostVolumes: null,
      LastDrain: null,
      CreateIndex: nodeRow(s, A).CreateIndex,
      ModifyIndex: nodeRow(s, A).ModifyIndex,
    });

    const withExtras = (await (await s.call("/v1/nodes?resources=true&os=true&prefix=bb")).json()) as Record<
      string,
      unknown
    >[];
    expect(withExtras).toHaveLength(1);
    expect(withExtras[0]).toMatchObject({
      Attributes: { "os.name": "ubuntu" },
      NodeResources: { Cpu: { CpuShares: 4000 } },
      ReservedResources: null,
    });

    const filtered = (await (
      await s.call(`/v1/nodes?filter=${encodeURIComponent('NodeClass == "web"')}`)
    ).json()) as {
      ID: string;
    }[];
    expect(filtered.map((n) => n.ID)).toEqual([A, A2]);

    const page1 = await s.call("/v1/nodes?per_page=2");
    expect(((await page1.json()) as { ID: string }[]).map((n) => n.ID)).toEqual([A, A2]);
    const token = page1.headers.get("x-nomad-nexttoken");
    expect(token).toBe(B);
    const page2 = await s.call(`/v1/nodes?per_page=2&next_token=${token}`);
    expect(((await page2.json()) as { ID: string }[]).map((n) => n.ID)).toEqual([B]);
    expect(page2.headers.get("x-nomad-nexttoken")).toBeNull();

    const bad = await s.call(`/v1/nodes?filter=${encodeURIComponent("Status ==")}`);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/failed to read filter expression/);
    const noSuchField = await s.call(`/v1/nodes?filter=${encodeURIComponent('SecretID == "x"')}`);
    expect(noSuchField.status).toBe(400);
  });

  it("answers a blocking list once a node changes", async () => {
    const { s } = await cluster([A]);
    const index = nodeRow(s, A).ModifyIndex;
    const waiting = s.call(`/v1/nodes?index=${index}&wait=10s`);
    await new TestNode(s, { id: B }).register();
    const res = await waiting;
    expect(Number(res.headers.get("x-nomad-index"))).toBeGreaterThan(index);
    expect(((await res.json()) as unknown[]).length).toBe(2);
  });
});

describe("/v1/node/:id", () => {
  it("finds a node by ID or unique prefix, refuses an ambiguous prefix, and 404s an unknown one", async () => {
    const { s } = await cluster([A, A2, B]);
    const exact = await s.call(`/v1/node/${A}`);
    expect(exact.status).toBe(200);
    expect(exact.headers.get("x-nomad-index")).toBe(String(nodeRow(s, A).ModifyIndex));
    expect(((await exact.json()) as NodeRow).ID).toBe(A);
    expect(((await (await s.call("/v1/node/bbbb")).json()) as NodeRow).ID).toBe(B);
    const ambiguous = await s.call("/v1/node/aaaa");
    expect(ambiguous.status).toBe(400);
    expect(await ambiguous.text()).toMatch(/matched multiple nodes/);
    const missing = await s.call("/v1/node/cccc");
    expect(missing.status).toBe(404);
    expect(await missing.text()).toBe("node not found");
  });

  it("wakes a blocking read on the node's own ModifyIndex", async () => {
    const { s, nodes } = await cluster([A]);
    const index = nodeRow(s, A).ModifyIndex;
    const waiting = s.call(`/v1/node/${A}?index=${index}&wait=10s`);
    await nodes[0]!.heartbeat();
    const res = await waiting;
    expect(((await res.json()) as NodeRow).Status).toBe("ready");
    expect(Number(res.headers.get("x-nomad-index"))).toBe(nodeRow(s, A).ModifyIndex);
  });

  it("lists the node's allocations in full", async () => {
    const { s, nodes } = await cluster([A, B]);
    await nodes[0]!.heartbeat();
    await nodes[1]!.heartbeat();
    const mine = await placeAlloc(s, { NodeID: A });
    await placeAlloc(s, { NodeID: B });
    const res = await s.call(`/v1/node/${A}/allocations`);
    expect(res.headers.get("x-nomad-index")).toBe(String(mine.ModifyIndex));
    const allocs = (await res.json()) as { ID: string; Job: { ID: string } }[];
    expect(allocs.map((a) => a.ID)).toEqual([mine.ID]);
    expect(allocs[0]!.Job.ID).toBe("web");
    expect((await s.call(`/v1/node/${A}/allocations`, { method: "DELETE" })).status).toBe(405);
  });
});

describe("node writes", () => {
  it("sets and cancels a drain, keeping LastDrain, and refuses eligibility while draining", async () => {
    const { s } = await cluster([A]);
    const set = await put(s, `/v1/node/${A}/drain`, {
      DrainSpec: { Deadline: 3_600_000_000_000 },
      Meta: { why: "kernel" },
    });
    expect(set.status).toBe(200);
    const answer = (await set.json()) as { NodeModifyIndex: number; Index: number };
    expect(answer.NodeModifyIndex).toBe(answer.Index);
    let node = nodeRow(s, A);
    expect(node.SchedulingEligibility).toBe("ineligible");
    expect(node.DrainStrategy?.DrainSpec.Deadline).toBe(3_600_000_000_000);
    expect(node.DrainStrategy?.ForceDeadline).not.toBe("0001-01-01T00:00:00Z");
    expect(node.LastDrain).toMatchObject({ Status: "draining", Meta: { why: "kernel" } });
    expect(node.Events.at(-1)).toMatchObject({ Message: "Node drain strategy set", Subsystem: "Drain" });
    const stub = ((await (await s.call("/v1/nodes")).json()) as { Drain: boolean }[])[0]!;
    expect(stub.Drain).toBe(true);

    const before = s.log.lastIndex();
    const refused = await put(s, `/v1/node/${A}/eligibility`, { Eligibility: "eligible" });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toBe(
      "can not set node's scheduling eligibility to eligible while it is draining",
    );
    expect(s.log.lastIndex()).toBe(before);

    expect((await put(s, `/v1/node/${A}/drain`, { DrainSpec: null, MarkEligible: true })).status).toBe(200);
    node = nodeRow(s, A);
    expect(node.DrainStrategy).toBeNull();
    expect(node.SchedulingEligibility).toBe("eligible");
    expect(node.LastDrain?.Status).toBe("canceled");
    expect(node.Events.at(-1)?.Message).toBe("Node drain disabled");

    const wrongType = await put(s, `/v1/node/${A}/drain`, { DrainSpec: { Deadline: "1h" } });
    expect(wrongType.status).toBe(400);
    expect(await wrongType.text()).toMatch(/body\.DrainSpec\.Deadline must be integer/);
  });

  it("toggles eligibility, creating node-update evaluations when a node becomes eligible", async () => {
    const { s, nodes } = await cluster([A]);
    await nodes[0]!.heartbeat();
    await placeAlloc(s, { NodeID: A });
    const off = await put(s, `/v1/node/${A}/eligibility`, { Eligibility: "ineligible" });
    expect(off.status).toBe(200);
    expect(((await off.json()) as { EvalIDs: unknown }).EvalIDs).toBeNull();
    expect(nodeRow(s, A).Events.at(-1)?.Message).toBe("Node marked as ineligible for scheduling");

    const before = s.log.lastIndex();
    const same = await put(s, `/v1/node/${A}/eligibility`, { Eligibility: "ineligible" });
    expect(await same.json()).toMatchObject({ Index: 0 });
    expect(s.log.lastIndex()).toBe(before);

    const on = await put(s, `/v1/node/${A}/eligibility`, { Eligibility: "eligible" });
    const answer = (await on.json()) as { EvalIDs: string[]; EvalCreateIndex: number };
    expect(answer.EvalIDs).toHaveLength(1);
    expect(s.store.table<EvaluationRow>("evals").get(answer.EvalIDs[0]!)).toMatchObject({
      TriggeredBy: "node-update",
      NodeID: A,
      JobID: "web",
      CreateIndex: answer.EvalCreateIndex,
    });

    const bad = await put(s, `/v1/node/${A}/eligibility`, { Eligibility: "maybe" });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toBe('invalid scheduling eligibility "maybe"');
  });

  it("evaluates a node: one evaluation per job with allocations there", async () => {
    const { s, nodes } = await cluster([A]);
    await nodes[0]!.heartbeat();
    const none = await put(s, `/v1/node/${A}/evaluate`);
    expect(await none.json()).toMatchObject({ EvalIDs: null, Index: 0 });
    await placeAlloc(s, { NodeID: A });
    await placeAlloc(s, { NodeID: A });
    await placeAlloc(s, { NodeID: A, JobID: "api" });
    const res = await put(s, `/v1/node/${A}/evaluate`);
    const answer = (await res.json()) as { EvalIDs: string[]; Index: number };
    expect(answer.EvalIDs).toHaveLength(2);
    expect(res.headers.get("x-nomad-index")).toBe(String(answer.Index));
    expect((await s.call(`/v1/node/${A}/evaluate`)).status).toBe(405);
  });

  it("purges a node and its secret, leaving nothing to expire", async () => {
    const { s, nodes, clock } = await cluster([A]);
    await nodes[0]!.heartbeat();
    await placeAlloc(s, { NodeID: A });
    const res = await put(s, `/v1/node/${A}/purge`);
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { EvalIDs: string[]; NodeModifyIndex: number; Index: number };
    expect(answer.EvalIDs).toHaveLength(1);
    expect(answer.NodeModifyIndex).toBe(answer.Index - 1);
    expect((await s.call(`/v1/node/${A}`)).status).toBe(404);
    expect(s.store.table("node_secrets").get(A)).toBeUndefined();
    // The purged node's secret no longer authenticates anything.
    expect((await nodes[0]!.heartbeat()).status).toBe(404);
    expect((await put(s, `/v1/node/${A}/purge`)).status).toBe(404);
    // No timer is left to expire for it.
    const before = s.log.lastIndex();
    clock.advance(120_000);
    await s.store.caughtUp();
    expect(s.log.lastIndex()).toBe(before);
  });
});
