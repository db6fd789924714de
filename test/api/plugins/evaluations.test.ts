import { afterEach, describe, expect, it } from "vitest";
import { VirtualClock } from "../../../src/util/clock.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { evaluation, upsertGroups } from "../eval-fixtures.ts";
import { placeAlloc, TestNode } from "../node-fixtures.ts";

interface Eval {
  readonly ID: string;
  readonly Status: string;
  readonly JobID: string;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
  readonly RelatedEvals: { ID: string }[] | null;
}

describe("/v1/evaluations and /v1/evaluation/:id", () => {
  const running: TestServer[] = [];
  const start = async () => {
    const s = await startTestServer();
    running.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop();
  });

  it("lists full evaluations with Nomad's fields, the evals index and an empty array when none", async () => {
    const s = await start();
    const empty = await s.call("/v1/evaluations");
    expect(empty.status).toBe(200);
    expect(await empty.json()).toEqual([]);
    // As Nomad: a table never written answers index 0.
    expect(empty.headers.get("x-nomad-index")).toBe("0");

    const e = evaluation({ Status: "blocked" });
    const index = await upsertGroups(s.store, [[e]]);
    const res = await s.call("/v1/evaluations");
    expect(res.headers.get("x-nomad-index")).toBe(String(index));
    expect(res.headers.get("x-nomad-nexttoken")).toBeNull();
    expect(await res.json()).toEqual([
      { ...e, RelatedEvals: null, LeaderACL: "", CreateIndex: index, ModifyIndex: index },
    ]);
  });

  it("filters by namespace, legacy status/job, bexpr filter and prefix", async () => {
    const s = await start();
    const a = evaluation({ JobID: "web", Status: "pending" });
    const b = evaluation({ JobID: "api", Status: "complete" });
    const c = evaluation({ JobID: "web", Status: "complete", Namespace: "batch" });
    await upsertGroups(s.store, [[a, b], [c]]);
    const ids = async (query: string) =>
      ((await (await s.call(`/v1/evaluations?${query}`)).json()) as Eval[]).map((e) => e.ID);
    expect(await ids("")).toEqual([a, b].sort(byId).map((e) => e.ID));
    expect(await ids("namespace=batch")).toEqual([c.ID]);
    expect((await ids("namespace=*")).sort()).toEqual([a.ID, b.ID, c.ID].sort());
    expect(await ids("status=complete")).toEqual([b.ID]);
    expect(await ids("namespace=*&job=web&status=complete")).toEqual([c.ID]);
    // a and c were written by different records: CreateIndex orders them, not ID.
    expect(await ids(`namespace=*&filter=${encodeURIComponent('JobID == "web"')}`)).toEqual([a.ID, c.ID]);
    expect(await ids(`prefix=${a.ID.slice(0, 8)}`)).toEqual([a.ID]);
    expect(await ids(`prefix=${c.ID.slice(0, 8)}`)).toEqual([]);
    expect(await ids(`namespace=*&prefix=${c.ID.slice(0, 8)}`)).toEqual([c.ID]);
  });

  it("refuses bad list parameters with a 400 naming them", async () => {
    const s = await start();
    await upsertGroups(s.store, [[evaluation()]]);
    const cases: [string, RegExp][] = [
      [
        `filter=${encodeURIComponent('Status == "pending"')}&status=pending`,
        /^Filter expression cannot be used with other filter parameters$/,
      ],
      [
        `filter=${encodeURIComponent("Status ==")}`,
        /^failed to create result paginator: failed to read filter expression: /,
      ],
      [`filter=${encodeURIComponent('Bogus == "x"')}`, /^failed to read result page: .*Bogus/],
      ["per_page=-1", /per_page must be a non-negative integer/],
      ["reverse=yes", /^Failed to parse value of "reverse" \(yes\) as a bool/],
      ["index=abc", /Invalid index/],
    ];
    for (const [query, message] of cases) {
      const res = await s.call(`/v1/evaluations?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.text()).toMatch(message);
    }
  });

  it("answers one evaluation, its related chain with ?related=true, and 404 for an unknown one", async () => {
    const s = await start();
    const first = evaluation({ Status: "complete" });
    const blocked = evaluation({ Status: "blocked", PreviousEval: first.ID });
    const next = evaluation({ PreviousEval: first.ID });
    const linked = { ...first, NextEval: next.ID, BlockedEval: blocked.ID };
    const index = await upsertGroups(s.store, [[blocked, next], [linked]]);
    const plain = await s.call(`/v1/evaluation/${first.ID}`);
    expect(plain.headers.get("x-nomad-index")).toBe(String(index));
    expect(((await plain.json()) as Eval).RelatedEvals).toBeNull();
    const related = (await (await s.call(`/v1/evaluation/${first.ID}?related=true`)).json()) as Eval;
    expect(related.RelatedEvals?.map((r) => r.ID)).toEqual([next.ID, blocked.ID]);
    expect(Object.keys(related.RelatedEvals?.[0] ?? {}).sort()).toEqual(
      [
        "ID",
        "Namespace",
        "Priority",
        "Type",
        "TriggeredBy",
        "JobID",
        "NodeID",
        "DeploymentID",
        "Status",
        "StatusDescription",
        "WaitUntil",
        "NextEval",
        "PreviousEval",
        "BlockedEval",
        "CreateIndex",
        "ModifyIndex",
        "CreateTime",
        "ModifyTime",
      ].sort(),
    );
    const missing = await s.call("/v1/evaluation/00000000-0000-0000-0000-000000000000");
    expect(missing.status).toBe(404);
    expect(await missing.text()).toBe("eval not found");
    const allocs = await s.call(`/v1/evaluation/${first.ID}/allocations`);
    expect(allocs.status).toBe(200);
    expect(await allocs.json()).toEqual([]);
  });

  it("lists the allocations an evaluation created, as Nomad's stubs", async () => {
    const s = await startTestServer({ deps: { clock: new VirtualClock() } });
    running.push(s);
    const node = new TestNode(s);
    await node.register();
    await node.heartbeat();
    const e = evaluation();
    await upsertGroups(s.store, [[e]]);
    const mine = await placeAlloc(s, { NodeID: node.id, EvalID: e.ID });
    await placeAlloc(s, { NodeID: node.id, EvalID: "another-eval" });
    const res = await s.call(`/v1/evaluation/${e.ID}/allocations`);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-nomad-index")).toBe(String(s.store.table("allocs").index));
    const body = (await res.json()) as Record<string, unknown>[];
    expect(body.map((a) => a.ID)).toEqual([mine.ID]);
    expect(body[0]).toMatchObject({ EvalID: e.ID, NodeID: node.id, JobID: "web", ClientStatus: "pending" });
    expect(body[0]).not.toHaveProperty("AllocatedResources");
  });

  it("counts with Nomad's reply shape; a filter error excludes rather than fails", async () => {
    const s = await start();
    const index = await upsertGroups(s.store, [
      [evaluation({ Status: "pending" }), evaluation({ Status: "complete" })],
      [evaluation({ Status: "pending", Namespace: "batch" })],
    ]);
    const count = async (query: string) =>
      (await (await s.call(`/v1/evaluations/count?${query}`)).json()) as {
        Count: number;
      };
    expect(await count("")).toEqual({
      Count: 2,
      Index: index,
      LastContact: 0,
      KnownLeader: true,
      NextToken: "",
    });
    expect((await count("namespace=*")).Count).toBe(3);
    expect((await count(`namespace=*&filter=${encodeURIComponent('Status == "pending"')}`)).Count).toBe(2);
    expect((await count(`filter=${encodeURIComponent('Status == "pending"')}`)).Count).toBe(1);
    expect((await count(`namespace=*&filter=${encodeURIComponent('Bogus == "x"')}`)).Count).toBe(0);
    const bad = await s.call(`/v1/evaluations/count?filter=${encodeURIComponent("Status ==")}`);
    expect(bad.status).toBe(400);
  });

  it("blocks a list until the evals table passes ?index, woken by the write", async () => {
    const s = await start();
    const index = await upsertGroups(s.store, [[evaluation()]]);
    const waiting = s.call(`/v1/evaluations?index=${index}&wait=30s`);
    const later = evaluation({ JobID: "late" });
    const written = await upsertGroups(s.store, [[later]]);
    const res = await waiting;
    expect(res.headers.get("x-nomad-index")).toBe(String(written));
    expect(((await res.json()) as Eval[]).map((e) => e.JobID)).toContain("late");
  });
});

function byId(a: { ID: string }, b: { ID: string }): number {
  return a.ID < b.ID ? -1 : 1;
}
