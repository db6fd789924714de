import { join } from "node:path";
import fc from "fast-check";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import { NODE_USAGE, nodeLiveUsage } from "../../projections/allocs-node-usage.ts";
import { createProjections } from "../../projections/index.ts";
import { allocUsage, nodeCapacity, type Usage } from "../../projections/resources.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import type { EventLog } from "../../src/log/event-log.ts";
import { SnapshotFile } from "../../src/store/snapshot-file.ts";
import { Store } from "../../src/store/store.ts";
import type { Table } from "../../src/store/table.ts";
import type { Draft } from "../../src/store/writer.ts";
import { type AllocationSpec, isTerminalAlloc } from "../../streams/allocs.ts";
import { allSchemas } from "../../streams/index.ts";
import { useTempDirs } from "../store/helpers.ts";
import { alloc, clientUpdate, memoryStore, nodeSpec, registered, statusChange } from "./memory-store.ts";

/**
 * The allocs table's kept per-node usage (projections/allocs-node-usage.ts)
 * against the node's live allocations summed from scratch, after random
 * placements, client updates, stops, in-place updates and collections; in
 * the store that applied them, in one that replayed the log, and in one
 * restored from a snapshot taken midway. And the plan applier's node check,
 * which reads it, refuses exactly the plans that the sum of the node's live
 * allocations (minus what the plan stops, with what it updates replaced,
 * plus what it places) says do not fit.
 */

const runs = (n: number) => ({ numRuns: n * Math.max(1, Number(process.env.PROPERTY_RUNS_SCALE) || 1) });
const logger = pino({ level: "silent" });
const NODES = ["n1", "n2"];
// Room for two or three allocations: most plans land near the edge, where a miscount shows.
const CAPACITY = { Cpu: { CpuShares: 3000 }, Memory: { MemoryMB: 4096 }, Disk: { DiskMB: 10_000 } };

interface Resources {
  readonly cpu: number;
  readonly memoryMB: number;
  readonly diskMB: number;
}

const resources: fc.Arbitrary<Resources> = fc.record({
  // Now and then half a MHz: not an integer, so the node's total is summed instead of kept.
  cpu: fc.oneof(
    { weight: 9, arbitrary: fc.integer({ min: 0, max: 1500 }) },
    { weight: 1, arbitrary: fc.constantFrom(100.5, 0.5) },
  ),
  memoryMB: fc.integer({ min: 0, max: 2000 }),
  diskMB: fc.integer({ min: 0, max: 5000 }),
});

const allocated = (r: Resources) => ({
  Tasks: { web: { Cpu: { CpuShares: r.cpu }, Memory: { MemoryMB: r.memoryMB } } },
  Shared: { DiskMB: r.diskMB },
});

type Op =
  | {
      kind: "plan";
      node: number;
      place: Resources | null;
      stop: number[];
      update: { pick: number; to: Resources } | null;
    }
  | { kind: "client"; pick: number; status: "running" | "complete" | "failed" | "pending" }
  | { kind: "gc"; picks: number[] }
  | { kind: "snapshot" };

const pick = fc.nat({ max: 1_000 });
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("plan" as const),
      node: fc.nat({ max: NODES.length - 1 }),
      place: fc.option(resources, { freq: 5 }),
      stop: fc.array(pick, { maxLength: 2 }),
      update: fc.option(fc.record({ pick, to: resources }), { freq: 3 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("client" as const),
      pick,
      status: fc.constantFrom("running" as const, "complete" as const, "failed" as const, "pending" as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("gc" as const), picks: fc.array(pick, { maxLength: 3 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "snapshot" as const }) },
);

/** The node's live usage summed from its rows, and whether every amount is an integer. */
function summed(allocs: Table<AllocRow>, nodeID: string): { usage: Usage; integers: boolean } {
  const usage = { cpu: 0, memoryMB: 0, diskMB: 0 };
  let integers = true;
  for (const a of allocs.all()) {
    if (a.NodeID !== nodeID || isTerminalAlloc(a)) continue;
    const u = allocUsage(a);
    integers &&= Number.isInteger(u.cpu) && Number.isInteger(u.memoryMB) && Number.isInteger(u.diskMB);
    usage.cpu += u.cpu;
    usage.memoryMB += u.memoryMB;
    usage.diskMB += u.diskMB;
  }
  return { usage, integers };
}

function expectKeptUsage(allocs: Table<AllocRow>): void {
  for (const nodeID of [...NODES, "no-such-node"]) {
    const { usage, integers } = summed(allocs, nodeID);
    const kept = allocs.sum(NODE_USAGE, nodeID);
    expect(kept).toEqual(integers ? [usage.cpu, usage.memoryMB, usage.diskMB] : undefined);
    expect(nodeLiveUsage(allocs, nodeID)).toEqual(usage);
  }
}

/** Whether the plan's part on `nodeID` fits, computed from the rows as the check did before usage was kept. */
function fits(
  allocs: Table<AllocRow>,
  nodeID: string,
  stopped: ReadonlySet<string>,
  updated: AllocationSpec | undefined,
  placed: AllocationSpec | undefined,
): boolean {
  const used = { cpu: 0, memoryMB: 0, diskMB: 0 };
  const add = (u: Usage) => {
    used.cpu += u.cpu;
    used.memoryMB += u.memoryMB;
    used.diskMB += u.diskMB;
  };
  for (const a of allocs.all()) {
    if (a.NodeID !== nodeID || isTerminalAlloc(a) || stopped.has(a.ID)) continue;
    add(allocUsage(a.ID === updated?.ID ? updated : a));
  }
  if (placed) add(allocUsage(placed));
  const cap = nodeCapacity(nodeSpec(nodeID, { NodeResources: CAPACITY }));
  return used.cpu <= cap.cpu && used.memoryMB <= cap.memoryMB && used.diskMB <= cap.diskMB;
}

const specOf = (row: AllocRow): AllocationSpec => {
  const { CreateIndex: _c, ModifyIndex: _m, AllocModifyIndex: _a, ...spec } = row;
  return spec;
};

async function rebuild(log: EventLog, snapshots?: SnapshotFile): Promise<Store> {
  const store = new Store({
    log,
    codec: new EnvelopeCodec(allSchemas),
    projections: createProjections().all,
    logger,
    snapshots,
  });
  await store.start();
  return store;
}

describe("the allocs table's per-node usage", () => {
  const tempDir = useTempDirs();

  it("equals the sum of the node's live allocations live, after replay and after a snapshot restore; the plan check refuses exactly what does not fit", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 30 }), async (ops) => {
        const { store, log, tables, write } = await memoryStore();
        const snapshots = new SnapshotFile(join(await tempDir(), "snap"), logger);
        for (const n of NODES) {
          await write(registered(n, "aa", { NodeResources: CAPACITY }));
          await write(statusChange(n, "initializing", "ready"));
        }
        const { allocs } = tables;
        let next = 0;
        const existing = () => [...allocs.all()];
        const chosen = (p: number) => {
          const rows = existing();
          return rows.length === 0 ? undefined : rows[p % rows.length];
        };
        const snapshot = async () => {
          const at = await rebuild(log, snapshots);
          await at.snapshot();
          await at.stop();
        };
        for (const [i, o] of ops.entries()) {
          // At least one snapshot, midway, so the last rebuild restores one and replays the rest.
          if (i === Math.floor(ops.length / 2)) await snapshot();
          if (o.kind === "snapshot") {
            await snapshot();
            continue;
          }
          if (o.kind === "client") {
            const a = chosen(o.pick);
            if (a) await write(clientUpdate(a.ID, a.NodeID, o.status));
          } else if (o.kind === "gc") {
            const ids = o.picks.map((p) => chosen(p)?.ID).filter((id): id is string => id !== undefined);
            await write({
              type: "GarbageCollected",
              v: 2,
              data: { Reason: "forced", EvalIDs: [], AllocIDs: ids, Jobs: [] },
            });
          } else {
            const nodeID = NODES[o.node]!;
            const onNode = existing().filter((a) => a.NodeID === nodeID);
            const stop = [...new Set(o.stop.map((p) => onNode[p % Math.max(1, onNode.length)]?.ID))].filter(
              (id): id is string => id !== undefined,
            );
            const target = o.update && onNode.length > 0 ? onNode[o.update.pick % onNode.length] : undefined;
            const updated =
              target && o.update
                ? { ...specOf(target), AllocatedResources: allocated(o.update.to) }
                : undefined;
            const placed = o.place
              ? alloc(`alloc-${next++}`, nodeID, { AllocatedResources: allocated(o.place) })
              : undefined;
            const expectFit = fits(allocs, nodeID, new Set(stop), updated, placed);
            const planID = `plan-${next++}`;
            const draft: Draft = {
              type: "AllocsPlanApplied",
              v: 1,
              data: {
                EvalID: "",
                PlanID: planID,
                Placed: placed ? [placed] : [],
                Updated: updated ? [updated] : [],
                Stopped: stop.map((ID) => ({
                  ID,
                  DesiredDescription: "stopped",
                  ClientStatus: "",
                  FollowupEvalID: "",
                  ModifyTime: 0,
                })),
                Preempted: [],
              },
            };
            const [outcome] = await write(draft);
            expect(outcome?.status).toBe("applied");
            const refused = tables.planRefusals.get(planID)?.Nodes.some((n) => n.NodeID === nodeID) ?? false;
            // A part that only stops is not checked.
            expect(refused).toBe(placed || updated ? !expectFit : false);
          }
          expectKeptUsage(allocs);
        }

        const replayed = await rebuild(log);
        expectKeptUsage(replayed.table<AllocRow>("allocs"));
        // From the last snapshot taken (if any) and the log after it.
        const restored = await rebuild(log, snapshots);
        expectKeptUsage(restored.table<AllocRow>("allocs"));
        expect(restored.hash()).toBe(store.hash());
        for (const s of [replayed, restored, store]) await s.stop();
      }),
      runs(100),
    );
  }, 120_000);
});
