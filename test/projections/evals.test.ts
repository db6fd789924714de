import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { deletable, scanWindow } from "../../projections/eval-delete-pages.ts";
import { isEvalDeleteSafe, NO_JOBS } from "../../projections/eval-delete-safety.ts";
import type { EvalDeleteRow, EvaluationRow } from "../../projections/evals.ts";
import { createProjections } from "../../projections/index.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { MemoryLog } from "../../src/log/memory-log.ts";
import { compileFilter } from "../../src/query/filter/index.ts";
import { Store } from "../../src/store/store.ts";
import { type Draft, writeEvents } from "../../src/store/writer.ts";
import type { EvaluationSpec, EvaluationsDeletedByFilter } from "../../streams/evals.ts";
import { allSchemas } from "../../streams/index.ts";
import type { SchedulerConfigSet } from "../../streams/scheduler-config.ts";
import { evaluation, tester } from "../api/eval-fixtures.ts";

const codec = new EnvelopeCodec(allSchemas);

async function newStore() {
  const store = new Store({
    log: new MemoryLog(),
    codec,
    projections: createProjections().all,
    logger: pino({ level: "silent" }),
  });
  await store.start();
  return store;
}

const write = (store: Store, drafts: Draft[]) => writeEvents(store, 1_700_000_000_000, tester, drafts);
const upsert = (Evals: EvaluationSpec[]): Draft => ({ type: "EvaluationsUpserted", v: 1, data: { Evals } });
const pause = (paused: boolean): Draft => {
  const data: SchedulerConfigSet = {
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
      PauseEvalBroker: paused,
    },
    CAS: false,
    CASIndex: 0,
  };
  return { type: "SchedulerConfigSet", v: 1, data };
};
const page = (data: Partial<EvaluationsDeletedByFilter>): Draft => ({
  type: "EvaluationsDeletedByFilter",
  v: 1,
  data: {
    DeleteID: "d-1",
    Filter: 'Status == "pending"',
    PerPage: 100,
    NextToken: "",
    LastToken: "",
    Expected: 0,
    ...data,
  },
});
const tokenOf = (row: EvaluationRow) => `${row.CreateIndex}.${row.ID}`;

describe("evals projection: deletes", () => {
  it("finds a page again at apply: whatever in its range is deletable then, and nothing outside it", async () => {
    const store = await newStore();
    const specs = Array.from({ length: 10 }, () => evaluation({ Status: "pending" }));
    await write(store, [pause(true), upsert(specs.slice(0, 5)), upsert(specs.slice(5))]);
    const evals = store.table<EvaluationRow>("evals");
    const ordered = [...evals.list()];
    // Between the handler's walk and the apply, one row in the range stops
    // matching and one outside it is of no concern.
    const changed = { ...ordered[2]!, Status: "complete" as const };
    await write(store, [upsert([changed])]);
    const { outcomes } = await write(store, [
      page({ NextToken: tokenOf(ordered[1]!), LastToken: tokenOf(ordered[6]!), Expected: 6 }),
    ]);
    expect(outcomes[0]!.status).toBe("applied");
    const left = [...evals.list()].map((e) => e.ID);
    expect(left).toEqual([ordered[0]!, ordered[2]!, ordered[7]!, ordered[8]!, ordered[9]!].map((e) => e.ID));
    expect(store.table<EvalDeleteRow>("eval_deletes").get("d-1")).toMatchObject({
      Expected: 6,
      Deleted: 5,
      Pages: 1,
      By: tester,
      Filter: 'Status == "pending"',
    });
  });

  it("rejects a page when the broker is not paused at apply, changing nothing", async () => {
    const store = await newStore();
    const specs = Array.from({ length: 3 }, () => evaluation({ Status: "pending" }));
    await write(store, [upsert(specs)]);
    const evals = store.table<EvaluationRow>("evals");
    const ordered = [...evals.list()];
    const draft = page({ NextToken: tokenOf(ordered[0]!), LastToken: tokenOf(ordered[2]!), Expected: 3 });
    const { outcomes } = await write(store, [draft, pause(true), pause(false), draft]);
    expect(outcomes[0]).toMatchObject({
      status: "rejected",
      code: 400,
      reason: "eval broker is enabled; eval broker must be paused to delete evals",
    });
    expect(outcomes[3]!.status).toBe("rejected");
    expect(evals.size).toBe(3);
    expect(store.table("eval_deletes").size).toBe(0);
    expect(store.table("evals").index).toBeLessThan(store.appliedIndex);
  });

  it("rejects records it cannot read back: a bad filter, bad tokens or page size", async () => {
    const store = await newStore();
    await write(store, [pause(true), upsert([evaluation({ Status: "pending" })])]);
    const { outcomes } = await write(store, [
      page({ Filter: "Status ==", NextToken: "1.a", LastToken: "9.z" }),
      page({ NextToken: "not-a-token", LastToken: "9.z" }),
      page({ NextToken: "1.a", LastToken: "9.z", PerPage: 0 }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(store.table("evals").size).toBe(1);
  });

  it("lets a garbage collector delete by ID without pausing the broker; operators must pause", async () => {
    const store = await newStore();
    const [a, b] = [evaluation(), evaluation()];
    await write(store, [upsert([a!, b!])]);
    const { outcomes } = await write(store, [
      { type: "EvaluationsDeleted", v: 1, data: { DeleteID: "x", EvalIDs: [a!.ID], UserInitiated: true } },
      {
        type: "EvaluationsDeleted",
        v: 1,
        data: { DeleteID: "y", EvalIDs: [a!.ID, "gone"], UserInitiated: false },
      },
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "applied"]);
    expect([...store.table<EvaluationRow>("evals").all()].map((e) => e.ID)).toEqual([b!.ID]);
    expect(store.table("eval_deletes").size).toBe(0);
  });

  it("walks windows of at most PerPage rows and stops at the rows present when it started", async () => {
    const store = await newStore();
    const specs = Array.from({ length: 25 }, (_, i) =>
      evaluation({ Status: i % 2 ? "pending" : "complete" }),
    );
    await write(store, [upsert(specs.slice(0, 12)), upsert(specs.slice(12, 20))]);
    const ceiling = store.appliedIndex;
    await write(store, [upsert(specs.slice(20))]);
    const evals = store.table<EvaluationRow>("evals");
    const isDeletable = deletable(compileFilter('Status == "pending"'), (row) =>
      isEvalDeleteSafe(row, NO_JOBS),
    );
    const pages = [];
    let after: { createIndex: number; id: string } | undefined;
    for (;;) {
      const scan = scanWindow(evals, isDeletable, after, ceiling, 6);
      if (scan.page) pages.push(scan.page);
      if (!scan.resumeAfter) break;
      after = scan.resumeAfter;
    }
    const old = [...evals.list()].filter((e) => e.CreateIndex <= ceiling);
    // A window whose rows are all kept yields no page; IDs are random, so count them.
    const windows = Array.from({ length: Math.ceil(old.length / 6) }, (_, w) => old.slice(w * 6, w * 6 + 6));
    expect(pages.length).toBe(windows.filter((w) => w.some((e) => e.Status === "pending")).length);
    expect(pages.reduce((n, p) => n + p.expected, 0)).toBe(old.filter((e) => e.Status === "pending").length);
    for (const p of pages) expect(Number(p.lastToken.split(".")[0])).toBeLessThanOrEqual(ceiling);
  });
});

describe("delete safety (Nomad's isEvalDeleteSafe)", () => {
  const e = { ID: "e", Namespace: "default", JobID: "web" };
  const job = (fields: object = {}) => ({
    Stop: false,
    Status: "running",
    TaskGroups: [{ Name: "tg", ReschedulePolicy: { Attempts: 2, Unlimited: false } }],
    ...fields,
  });
  const alloc = (fields: object = {}) => ({
    ClientStatus: "complete",
    TaskGroup: "tg",
    NextAllocation: "",
    RescheduleTracker: null,
    ...fields,
  });
  const safe = (j: object | undefined, allocs: object[]) =>
    isEvalDeleteSafe(e, {
      job: () => j as ReturnType<typeof job> | undefined,
      allocsByEval: () => allocs as ReturnType<typeof alloc>[],
    });

  it.each([
    ["job gone", undefined, [alloc({ ClientStatus: "running" })], true],
    ["job stopped", job({ Stop: true }), [alloc({ ClientStatus: "running" })], true],
    ["job dead", job({ Status: "dead" }), [alloc({ ClientStatus: "unknown" })], true],
    ["running alloc", job(), [alloc({ ClientStatus: "running" })], false],
    ["unknown alloc", job(), [alloc({ ClientStatus: "unknown" })], false],
    ["complete alloc", job(), [alloc()], true],
    ["failed, not yet replaced", job(), [alloc({ ClientStatus: "failed" })], false],
    [
      "failed, replaced, with history",
      job(),
      [alloc({ ClientStatus: "failed", NextAllocation: "n", RescheduleTracker: { Events: [{}] } })],
      true,
    ],
    ["failed, replaced, no history", job(), [alloc({ ClientStatus: "failed", NextAllocation: "n" })], false],
    [
      "failed, unlimited rescheduling",
      job({ TaskGroups: [{ Name: "tg", ReschedulePolicy: { Attempts: 0, Unlimited: true } }] }),
      [alloc({ ClientStatus: "failed", NextAllocation: "n", RescheduleTracker: { Events: [{}] } })],
      false,
    ],
    [
      "failed, rescheduling disabled",
      job({ TaskGroups: [{ Name: "tg", ReschedulePolicy: { Attempts: 0, Unlimited: false } }] }),
      [alloc({ ClientStatus: "failed" })],
      true,
    ],
  ])("%s", (_name, j, allocs, want) => {
    expect(safe(j, allocs)).toBe(want);
  });
});
