/**
 * Run under tsx by pass-figures.test.ts (tsx names closures as the server's
 * loader does, which vitest's transform does not): CPU per in-process
 * scheduling pass of the registration benchmark's evaluations (a batch job,
 * no nodes: every placement fails), a fresh process's first passes then
 * warmed-up ones. Prints one JSON line.
 */
import { randomUUID } from "node:crypto";
import { ReadyNodes } from "../../../src/services/scheduler/ready-nodes.ts";
import { computeInProcess } from "../../../src/services/scheduler/worker.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import type { Envelope } from "../../../streams/event-schema.ts";
import { startBootstrappedStore } from "../../fixtures/bootstrapped-store.ts";
import { registeredBatchJob } from "../../fixtures/registered-batch-job.ts";

const COLD = Number(process.env.PASSES_COLD ?? 2_000);
const WARM = Number(process.env.PASSES_WARM ?? 6_000);
const AT = 1_763_800_000_000;

const { store, tables } = await startBootstrappedStore(AT);
const ids: string[] = [];
for (let i = 0; i < COLD + WARM; i += 16) {
  const batch: Envelope[] = [];
  for (let j = i; j < Math.min(i + 16, COLD + WARM); j++) {
    const record = registeredBatchJob(j, AT);
    ids.push((record.data as { Eval: { ID: string } }).Eval.ID);
    batch.push(record);
  }
  await store.waitFor((await store.append(batch)).last);
}
const rt = {
  tables,
  readyNodes: new ReadyNodes(tables.nodes),
  clock: new VirtualClock(AT),
  newID: randomUUID,
  appliedIndex: () => store.appliedIndex,
};
const usPerPass = (from: number, to: number): number => {
  const cpu = process.cpuUsage();
  for (let i = from; i < to; i++) {
    const pass = computeInProcess(rt, tables.evals.get(ids[i]!)!, 0);
    if (pass.failedTGAllocs === null) throw new Error("a pass placed an allocation with no nodes");
  }
  const used = process.cpuUsage(cpu);
  return Math.round(((used.user + used.system) / (to - from)) * 10) / 10;
};
const cold = usPerPass(0, COLD);
const warm = usPerPass(COLD, COLD + WARM);
console.log(JSON.stringify({ cold_us_per_pass: cold, warm_us_per_pass: warm }));
await store.stop();
