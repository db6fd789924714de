import type { AllocRunner } from "./alloc-runner.ts";
import type { NodeSimulator } from "./simulator.ts";
import type { WorkloadJob } from "./workload.ts";

export interface JobProgress {
  /** Allocations the clients run for the job: desired run, started, not finished (a restart pending counts). */
  live: number;
  /** Slots (allocation names; per node for system jobs) that run more than once at a time. */
  duplicates: number;
  /** Slots that are running, or (batch) that finished successfully. */
  covered: number;
}

export interface Convergence {
  readonly converged: boolean;
  /** Allocations placed but not started yet, anywhere. */
  readonly starting: number;
  readonly jobs: ReadonlyMap<string, JobProgress>;
  /** Why it has not converged, for progress lines and test failures. */
  readonly waiting: readonly string[];
}

/**
 * Whether every job of the workload runs as desired, as the clients see it:
 * nothing waits to start; service and system jobs run exactly their count
 * (a system job one per node); batch jobs cover every slot, running or done
 * (Nomad counts a batch allocation that ran successfully as done, a killed
 * one included); and no slot runs twice, so a reconnected allocation and its
 * replacement are never both running once converged.
 */
export function convergence(sim: NodeSimulator, jobs: readonly WorkloadJob[], nodes: number): Convergence {
  const byJob = new Map(jobs.map((j) => [j.id, j]));
  const progress = new Map<string, JobProgress>(
    jobs.map((j) => [j.id, { live: 0, duplicates: 0, covered: 0 }]),
  );
  const liveSlots = new Map<string, number>();
  const doneSlots = new Set<string>();
  let starting = 0;
  for (const { nodeID, runner } of sim.runners()) {
    const job = byJob.get(runner.spec.JobID);
    if (!job || runner.destroyed) continue;
    const slot = `${runner.spec.JobID}\u0000${runner.spec.Name}\u0000${job.type === "system" ? nodeID : ""}`;
    if (runs(runner)) {
      if (!runner.everStarted) {
        starting++;
        continue;
      }
      progress.get(job.id)!.live++;
      liveSlots.set(slot, (liveSlots.get(slot) ?? 0) + 1);
    } else if (job.type === "batch" && runner.clientStatus === "complete") {
      doneSlots.add(slot);
    }
  }
  for (const [slot, count] of liveSlots) {
    const p = progress.get(slot.split("\u0000")[0]!)!;
    p.covered++;
    if (count > 1) p.duplicates++;
    doneSlots.delete(slot);
  }
  for (const slot of doneSlots) progress.get(slot.split("\u0000")[0]!)!.covered++;
  const waiting: string[] = [];
  if (starting > 0) waiting.push(`${starting} allocations starting`);
  for (const j of jobs) {
    const p = progress.get(j.id)!;
    const want = j.count < 0 ? nodes : j.count;
    if (p.duplicates > 0) waiting.push(`${j.id}: ${p.duplicates} slots running twice`);
    if (j.type === "batch" ? p.covered !== want : p.live !== want) {
      waiting.push(`${j.id}: ${j.type === "batch" ? p.covered : p.live}/${want}`);
    }
  }
  return { converged: waiting.length === 0, starting, jobs: progress, waiting };
}

/** Desired to run and not finished: started, or about to start. */
function runs(runner: AllocRunner): boolean {
  return !runner.terminal && runner.desiredStatus === "run";
}

/**
 * How many allocations of the workload's jobs the clients run: the sum of
 * `convergence(…).jobs`' `live` counts, without the slots' keys and maps
 * that convergence builds. The load benchmark asks twice a second during its
 * placement burst; over 50,000 allocations convergence took a tenth of the
 * simulator's CPU there, in stretches its nodes' calls waited behind.
 */
export function liveAllocations(sim: NodeSimulator, jobs: readonly WorkloadJob[]): number {
  const ids = new Set(jobs.map((j) => j.id));
  let live = 0;
  // The nodes' own maps, not sim.runners(): its generator and a pair per runner doubled the time.
  for (const node of sim.nodes)
    for (const runner of node.runners.values())
      if (!runner.destroyed && runs(runner) && runner.everStarted && ids.has(runner.spec.JobID)) live++;
  return live;
}
