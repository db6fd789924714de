import { pino } from "pino";
import { filter, firstValueFrom } from "rxjs";
import { afterEach, describe, expect, it } from "vitest";
import type { EvalDeleteRow, EvaluationRow } from "../../../projections/evals.ts";
import { createProjections } from "../../../projections/index.ts";
import { EnvelopeCodec } from "../../../src/codec/envelope-codec.ts";
import { Store } from "../../../src/store/store.ts";
import { type Draft, writeEvents } from "../../../src/store/writer.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import type { EvaluationSpec } from "../../../streams/evals.ts";
import type { Envelope } from "../../../streams/event-schema.ts";
import { allSchemas } from "../../../streams/index.ts";
import type { JobSpec } from "../../../streams/jobs.ts";
import type { SchedulerConfigSet } from "../../../streams/scheduler-config.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { cyclingGroups, evaluation, tester, upsertGroups } from "../eval-fixtures.ts";
import { placeAlloc, TestNode } from "../node-fixtures.ts";

const BROKER = "eval broker is enabled; eval broker must be paused to delete evals";

describe("DELETE /v1/evaluations", () => {
  const running: TestServer[] = [];
  const start = async () => {
    const s = await startTestServer();
    running.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop();
  });

  const del = (s: TestServer, body: unknown, query = "") =>
    s.call(`/v1/evaluations${query}`, { method: "DELETE", body: JSON.stringify(body) });
  const pause = async (s: TestServer, paused: boolean) => {
    const res = await s.call("/v1/operator/scheduler/configuration", {
      method: "PUT",
      body: JSON.stringify({ SchedulerAlgorithm: "binpack", PauseEvalBroker: paused }),
    });
    expect(res.status).toBe(200);
  };
  const evals = (s: TestServer) => s.store.table<EvaluationRow>("evals");
  const audit = (s: TestServer) => s.store.table<EvalDeleteRow>("eval_deletes");

  /** 3,000 evaluations in ~430 records; every third one pending, in two namespaces. */
  const seed = async (s: TestServer) => {
    const specs: EvaluationSpec[] = [];
    for (let i = 0; i < 3000; i++) {
      specs.push(
        evaluation({
          Status: i % 3 === 0 ? "pending" : "complete",
          Namespace: i % 7 === 0 ? "batch" : "default",
          JobID: `job-${i % 11}`,
        }),
      );
    }
    await upsertGroups(s.store, cyclingGroups(specs));
    return specs;
  };

  it("is refused while the eval broker runs, by filter and by IDs, writing nothing", async () => {
    const s = await start();
    const [e] = await seed(s);
    const before = s.log.lastIndex();
    for (const body of [{ Filter: 'Status == "pending"' }, { EvalIDs: [e!.ID] }]) {
      const res = await del(s, body);
      expect(res.status).toBe(400);
      expect(await res.text()).toBe(BROKER);
    }
    expect(s.log.lastIndex()).toBe(before);
    expect(evals(s).size).toBe(3000);
  });

  it("refuses malformed requests with Nomad's messages, writing nothing", async () => {
    const s = await start();
    const [e] = await seed(s);
    await pause(s, true);
    const before = s.log.lastIndex();
    const tooMany = Array.from({ length: 7282 }, (_, i) => `id-${i}`);
    const cases: [unknown, number, RegExp][] = [
      [{}, 400, /^evals must be deleted by either ID or filter$/],
      [{ EvalIDs: null, Filter: "" }, 400, /^evals must be deleted by either ID or filter$/],
      [
        { EvalIDs: [e!.ID], Filter: 'Status == "pending"' },
        400,
        /^evals cannot be deleted by both ID and filter$/,
      ],
      [{ EvalIDs: tooMany }, 400, /^request includes 7282 evaluation IDs, must be 7281 or fewer$/],
      [{ Filter: "Status ==" }, 400, /^failed to read filter expression: 1:10 \(9\): no match found/],
      // An unknown field is ignored, as Nomad's decoder ignores it: this body names neither.
      [{ Filters: "x" }, 400, /^evals must be deleted by either ID or filter$/],
      [{ EvalIDs: [e!.ID, "00000000-0000-0000-0000-000000000000"] }, 404, /^eval not found$/],
    ];
    for (const [body, status, message] of cases) {
      const res = await del(s, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(await res.text()).toMatch(message);
    }
    const empty = await s.call("/v1/evaluations", { method: "DELETE" });
    expect(empty.status).toBe(400);
    expect(await empty.text()).toBe("Request body is empty");
    expect((await del(s, { Filter: 'Status == "pending"' }, "?per_page=0")).status).toBe(400);
    expect(s.log.lastIndex()).toBe(before);
    expect(evals(s).size).toBe(3000);
  });

  it("deletes exactly the matching evaluations by filter, in pages, none skipped, in every namespace", async () => {
    const s = await start();
    const specs = await seed(s);
    await pause(s, true);
    const evalsIndexBefore = evals(s).index;
    const before = s.log.lastIndex();
    const res = await del(s, { Filter: 'Status == "pending"' }, "?per_page=100");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { Count: number; Index: number };
    const pending = specs.filter((e) => e.Status === "pending");
    expect(body.Count).toBe(pending.length);
    expect(res.headers.get("x-nomad-index")).toBe(String(body.Index));
    expect(body.Index).toBe(s.log.lastIndex());
    // One small record per page of at most 100 rows: 3,000 rows, so 30 pages.
    expect(s.log.lastIndex() - before).toBe(30);
    const left = [...evals(s).all()];
    expect(left.filter((e) => e.Status === "pending")).toEqual([]);
    expect(left.map((e) => e.ID).sort()).toEqual(
      specs
        .filter((e) => e.Status !== "pending")
        .map((e) => e.ID)
        .sort(),
    );
    expect(evals(s).index).toBeGreaterThan(evalsIndexBefore);
    // The audit trail: who, with what, how many expected and deleted.
    const [row] = [...audit(s).all()];
    expect(row).toMatchObject({
      // A caller of a cluster without ACLs is known by its address.
      By: { kind: "remote", id: "127.0.0.1", addr: "127.0.0.1" },
      Filter: 'Status == "pending"',
      Pages: 30,
      Expected: pending.length,
      Deleted: pending.length,
      ModifyIndex: body.Index,
    });

    const none = await del(s, { Filter: 'Status == "pending"' });
    expect(await none.json()).toEqual({ Count: 0, Index: 0 });
  });

  it("skips evaluations that are not delete-safe, and refuses them by ID", async () => {
    const clock = new VirtualClock();
    const s = await startTestServer({ deps: { clock } });
    running.push(s);
    const node = new TestNode(s);
    await node.register();
    await node.heartbeat();
    // Paused first: the scheduler must not run the job's evaluations this test sets up by hand.
    await pause(s, true);
    // A live job whose evaluation placed an allocation that now runs: deleting
    // that evaluation could lose work, so Nomad's rule keeps it.
    const job = {
      ID: "web",
      Name: "web",
      Namespace: "default",
      Region: "global",
      Type: "service",
      Priority: 50,
      AllAtOnce: false,
      Datacenters: ["*"],
      Constraints: null,
      TaskGroups: [
        {
          Name: "frontend",
          Count: 1,
          Update: null,
          Migrate: null,
          Constraints: null,
          RestartPolicy: null,
          ReschedulePolicy: null,
          EphemeralDisk: { Sticky: false, SizeMB: 300, Migrate: false },
          Tasks: [],
        },
      ],
      Update: null,
      Periodic: null,
      ParameterizedJob: null,
      Meta: null,
      Stop: false,
      ParentID: "",
    } as unknown as JobSpec;
    const registered = await writeEvents(s.store, Date.now(), tester, [
      {
        type: "JobRegistered",
        v: 2,
        data: { Job: job, Eval: null, EnforceIndex: false, JobModifyIndex: 0, Submission: null },
      },
    ]);
    expect(registered.outcomes[0]!.status).toBe("applied");
    const busy = evaluation({ JobID: "web" });
    const idle = evaluation({ JobID: "web" });
    const orphan = evaluation({ JobID: "gone" });
    await upsertGroups(s.store, [[busy, idle], [orphan]]);
    const alloc = await placeAlloc(s, { NodeID: node.id, EvalID: busy.ID });
    const update = await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "running" }]);
    expect(update.status).toBe(200);

    const res = await del(s, { Filter: 'Status == "pending"' });
    expect(await res.json()).toMatchObject({ Count: 2 });
    expect([...evals(s).all()].map((e) => e.ID)).toEqual([busy.ID]);
    const refused = await del(s, { EvalIDs: [busy.ID] });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toBe(`eval ${busy.ID} is not safe to delete`);
  });

  it("deletes by IDs, and counts what the apply deleted", async () => {
    const s = await start();
    const specs = await seed(s);
    await pause(s, true);
    const ids = specs.slice(0, 5).map((e) => e.ID);
    const res = await del(s, { EvalIDs: [...ids, ids[0]] });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ Count: 5, Index: s.log.lastIndex() });
    for (const id of ids) expect(evals(s).get(id)).toBeUndefined();
    expect(evals(s).size).toBe(2995);
    expect((await s.call(`/v1/evaluation/${ids[0]}`)).status).toBe(404);
  });

  it("leaves evaluations created behind the cursor during a delete intact", async () => {
    const s = await start();
    const specs = await seed(s);
    await pause(s, true);
    const late = [evaluation({ Status: "pending" }), evaluation({ Status: "pending" })];
    // As soon as the first page is applied, a writer adds matching evaluations.
    const firstPage = firstValueFrom(
      s.store.change$.pipe(filter((c) => c.table === "evals" && c.after === undefined)),
    ).then(() => upsertGroups(s.store, [late]));
    const res = await del(s, { Filter: 'Status == "pending"' }, "?per_page=100");
    const lateIndex = await firstPage;
    const body = (await res.json()) as { Count: number; Index: number };
    expect(lateIndex).toBeLessThan(body.Index);
    expect(body.Count).toBe(specs.filter((e) => e.Status === "pending").length);
    const pendingLeft = [...evals(s).all()].filter((e) => e.Status === "pending").map((e) => e.ID);
    expect(pendingLeft.sort()).toEqual(late.map((e) => e.ID).sort());
  });

  const resume: Draft<Envelope<"SchedulerConfigSet", SchedulerConfigSet>> = {
    type: "SchedulerConfigSet",
    v: 1,
    data: {
      Config: {
        SchedulerAlgorithm: "binpack",
        PreemptionConfig: {
          SystemSchedulerEnabled: true,
          SysBatchSchedulerEnabled: false,
          BatchSchedulerEnabled: false,
          ServiceSchedulerEnabled: false,
        },
        MemoryOversubscriptionEnabled: false,
        RejectJobRegistration: false,
        PauseEvalBroker: false,
      },
      CAS: false,
      CASIndex: 0,
    },
  };

  it("stops when the broker is resumed mid-delete: the rest is rejected at apply", async () => {
    const s = await start();
    const specs = await seed(s);
    await pause(s, true);
    // Resumed by a record appended the moment the first page applies, so it
    // lands before the handler's second page.
    const resumed = firstValueFrom(
      s.store.change$.pipe(filter((c) => c.table === "evals" && c.after === undefined)),
    ).then(() => writeEvents(s.store, Date.now(), tester, [resume]));
    const res = await del(s, { Filter: 'Status == "pending"' }, "?per_page=100");
    await resumed;
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).toMatch(
      /^eval broker is enabled; eval broker must be paused to delete evals \(\d+ evaluations were deleted before this\)$/,
    );
    const deleted = Number(/\((\d+) evaluations/.exec(text)![1]);
    expect(deleted).toBe([...audit(s).all()][0]!.Deleted);
    const pending = specs.filter((e) => e.Status === "pending").length;
    expect(deleted).toBeGreaterThan(0);
    expect(deleted).toBeLessThan(pending);
    expect([...evals(s).all()].filter((e) => e.Status === "pending").length).toBe(pending - deleted);
  });

  it("rebuilds identical tables from a log with filter deletes, in a fresh store", async () => {
    const s = await start();
    await seed(s);
    await pause(s, true);
    await del(s, { Filter: 'Status == "pending" and Namespace == "batch"' }, "?per_page=50");
    await del(s, { Filter: 'JobID matches "^job-1"' }, "?per_page=100");
    await s.store.caughtUp();
    const fresh = new Store({
      log: s.log,
      codec: new EnvelopeCodec(allSchemas),
      projections: createProjections().all,
      logger: pino({ level: "silent" }),
    });
    await fresh.start();
    try {
      expect(fresh.appliedIndex).toBe(s.store.appliedIndex);
      expect(fresh.hash()).toBe(s.store.hash());
      expect(fresh.table("evals").size).toBe(evals(s).size);
    } finally {
      await fresh.stop();
    }
  });
});
