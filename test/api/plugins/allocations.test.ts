import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import type { EvaluationRow } from "../../../projections/evals.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { allocRow, placeAlloc, TestNode } from "../node-fixtures.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

async function withAllocs() {
  const clock = new VirtualClock();
  const s = await startTestServer({ deps: { clock } });
  running.push(s);
  const node = new TestNode(s);
  await node.register();
  await node.heartbeat();
  const a = await placeAlloc(s, { ID: "c0000000-0000-4000-8000-000000000001", NodeID: node.id });
  const b = await placeAlloc(s, {
    ID: "a0000000-0000-4000-8000-000000000002",
    NodeID: node.id,
    JobID: "api",
  });
  const c = await placeAlloc(s, {
    ID: "b0000000-0000-4000-8000-000000000003",
    NodeID: node.id,
    Namespace: "prod",
    JobID: "web",
  });
  return { s, clock, node, a, b, c };
}

describe("/v1/allocations", () => {
  it("lists AllocListStubs of a namespace by create index, with pagination, filter, prefix and reverse", async () => {
    const { s, a, b, c } = await withAllocs();
    const res = await s.call("/v1/allocations");
    expect(res.headers.get("x-nomad-index")).toBe(String(c.ModifyIndex));
    const stubs = (await res.json()) as Record<string, unknown>[];
    expect(stubs.map((x) => x.ID)).toEqual([a.ID, b.ID]);
    expect(Object.keys(stubs[0]!)).toEqual([
      "ID",
      "EvalID",
      "Name",
      "Namespace",
      "NodeID",
      "NodeName",
      "JobID",
      "JobType",
      "JobVersion",
      "TaskGroup",
      "DesiredStatus",
      "DesiredDescription",
      "ClientStatus",
      "ClientDescription",
      "DesiredTransition",
      "TaskStates",
      "DeploymentStatus",
      "FollowupEvalID",
      "RescheduleTracker",
      "PreemptedAllocations",
      "PreemptedByAllocation",
      "CreateIndex",
      "ModifyIndex",
      "CreateTime",
      "ModifyTime",
    ]);
    expect(stubs[0]).toMatchObject({ JobType: "service", JobVersion: 0, ClientStatus: "pending" });

    const all = (await (await s.call("/v1/allocations?namespace=*")).json()) as { ID: string }[];
    expect(all.map((x) => x.ID)).toEqual([a.ID, b.ID, c.ID]);
    const reversed = (await (await s.call("/v1/allocations?namespace=*&reverse=true")).json()) as {
      ID: string;
    }[];
    expect(reversed.map((x) => x.ID)).toEqual([c.ID, b.ID, a.ID]);

    const page1 = await s.call("/v1/allocations?namespace=*&per_page=2");
    expect(page1.headers.get("x-nomad-nexttoken")).toBe(`${c.CreateIndex}.${c.ID}`);
    const page2 = await s.call(
      `/v1/allocations?namespace=*&per_page=2&next_token=${page1.headers.get("x-nomad-nexttoken")}`,
    );
    expect(((await page2.json()) as { ID: string }[]).map((x) => x.ID)).toEqual([c.ID]);

    const byPrefix = (await (await s.call("/v1/allocations?namespace=*&prefix=b0")).json()) as {
      ID: string;
    }[];
    expect(byPrefix.map((x) => x.ID)).toEqual([c.ID]);
    const filtered = (await (
      await s.call(`/v1/allocations?filter=${encodeURIComponent('JobID == "api"')}`)
    ).json()) as {
      ID: string;
    }[];
    expect(filtered.map((x) => x.ID)).toEqual([b.ID]);

    const lean = (await (await s.call("/v1/allocations?task_states=false&resources=true")).json()) as Record<
      string,
      unknown
    >[];
    expect(lean[0]).not.toHaveProperty("TaskStates");
    expect(lean[0]).toHaveProperty("AllocatedResources", null);

    expect((await s.call("/v1/allocations?per_page=-1")).status).toBe(400);
  });

  it("reads one allocation in full, blocking on its own ModifyIndex", async () => {
    const { s, clock, node, a } = await withAllocs();
    const got = await s.call(`/v1/allocation/${a.ID}`);
    expect(got.headers.get("x-nomad-index")).toBe(String(a.ModifyIndex));
    expect(((await got.json()) as AllocRow).Job?.TaskGroups[0]?.Name).toBe("frontend");
    expect((await s.call("/v1/allocation/nope")).status).toBe(404);

    const waiting = s.call(`/v1/allocation/${a.ID}?index=${a.ModifyIndex}&wait=10s`);
    await node.updateAllocs(clock, [{ ID: a.ID, ClientStatus: "running" }]);
    const woke = await waiting;
    expect(((await woke.json()) as AllocRow).ClientStatus).toBe("running");
    expect(Number(woke.headers.get("x-nomad-index"))).toBe(allocRow(s, a.ID).ModifyIndex);
  });

  it("stops an allocation: migrate transition and an alloc-stop evaluation in one write", async () => {
    const { s, a } = await withAllocs();
    const res = await s.call(`/v1/allocation/${a.ID}/stop?no_shutdown_delay=true`, { method: "POST" });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { EvalID: string; Index: number };
    expect(res.headers.get("x-nomad-index")).toBe(String(answer.Index));
    const stopped = allocRow(s, a.ID);
    expect(stopped.DesiredTransition).toEqual({ Migrate: true, NoShutdownDelay: true });
    expect(stopped.AllocModifyIndex).toBe(answer.Index - 1);
    expect(s.store.table<EvaluationRow>("evals").get(answer.EvalID)).toMatchObject({
      TriggeredBy: "alloc-stop",
      JobID: "web",
      Type: "service",
      CreateIndex: answer.Index,
    });

    const before = s.log.lastIndex();
    expect((await s.call("/v1/allocation/nope/stop", { method: "PUT" })).status).toBe(404);
    expect(
      (await s.call(`/v1/allocation/${a.ID}/stop?no_shutdown_delay=maybe`, { method: "PUT" })).status,
    ).toBe(400);
    expect((await s.call(`/v1/allocation/${a.ID}/stop`)).status).toBe(405);
    expect(s.log.lastIndex()).toBe(before);
  });

  it("marks a stopped allocation for rescheduling with ?reschedule=true, as `nomad alloc stop -reschedule`", async () => {
    const { s, a } = await withAllocs();
    const res = await s.call(`/v1/allocation/${a.ID}/stop?reschedule=true`, { method: "PUT" });
    expect(res.status).toBe(200);
    expect(allocRow(s, a.ID).DesiredTransition).toEqual({
      Migrate: true,
      NoShutdownDelay: false,
      Reschedule: true,
    });
  });
});
