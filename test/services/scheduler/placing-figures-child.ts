/**
 * Run under tsx by pass-figures.test.ts: CPU per placement of an in-process
 * scheduling pass that places one service job's allocations over ready
 * nodes (PLACING_NODES, default 2,000; PLACING_COUNT allocations, default
 * 2,000), the pass computed PLACING_ROUNDS times after one to warm up. The
 * same evaluation each round: a pass only reads the tables. Prints one JSON
 * line.
 */
import { randomUUID } from "node:crypto";
import { readyNodeDrafts } from "../../../src/bench/bench-nodes.ts";
import { ReadyNodes } from "../../../src/services/scheduler/ready-nodes.ts";
import { computeInProcess } from "../../../src/services/scheduler/worker.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import type { Envelope } from "../../../streams/event-schema.ts";
import { startBootstrappedStore } from "../../fixtures/bootstrapped-store.ts";
import { rawBatchJob, registeredJob } from "../../fixtures/registered-batch-job.ts";

const NODES = Number(process.env.PLACING_NODES ?? 2_000);
const COUNT = Number(process.env.PLACING_COUNT ?? 2_000);
const ROUNDS = Number(process.env.PLACING_ROUNDS ?? 10);
const AT = 1_763_800_000_000;

const { store, tables } = await startBootstrappedStore(AT);
for (let i = 0; i < NODES; i += 100) {
  const batch: Envelope[] = [];
  for (let j = i; j < Math.min(i + 100, NODES); j++)
    for (const d of readyNodeDrafts(j).drafts) batch.push({ ...d, at: AT } as Envelope);
  await store.waitFor((await store.append(batch)).last);
}
const raw = rawBatchJob("placed");
raw.Type = "service";
const group = (raw.TaskGroups as { Count: number; Tasks: { Driver: string }[] }[])[0]!;
group.Count = COUNT;
// The bench nodes run docker.
group.Tasks[0]!.Driver = "docker";
const registered = registeredJob(raw, AT);
const evaluationId = (registered.data as { Eval: { ID: string } }).Eval.ID;
await store.waitFor((await store.append([registered])).last);
const rt = {
  tables,
  readyNodes: new ReadyNodes(tables.nodes),
  clock: new VirtualClock(AT),
  newID: randomUUID,
  appliedIndex: () => store.appliedIndex,
};
const row = tables.evals.get(evaluationId)!;
const pass = () => {
  const out = computeInProcess(rt, row, 0);
  if (out.failedTGAllocs !== null)
    throw new Error(`a placement failed: ${JSON.stringify(out.failedTGAllocs).slice(0, 600)}`);
};
pass();
const cpu = process.cpuUsage();
for (let r = 0; r < ROUNDS; r++) pass();
const used = process.cpuUsage(cpu);
const us = (used.user + used.system) / (ROUNDS * COUNT);
console.log(JSON.stringify({ nodes: NODES, count: COUNT, us_per_placement: Math.round(us * 100) / 100 }));
await store.stop();
