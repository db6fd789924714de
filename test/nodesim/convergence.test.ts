import { afterEach, expect, it } from "vitest";
import { convergence, liveAllocations } from "../../src/nodesim/convergence.ts";
import { NodeSimulator } from "../../src/nodesim/simulator.ts";
import { registerJobs, type WorkloadJob, workloadJobs } from "../../src/nodesim/workload.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { allocsTable, eventually, FAST_HEARTBEATS, nodesTable } from "./fixtures.ts";

const NODES = 200;

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

let waiting: string[] = [];
/** Each time liveAllocations and convergence's live counts differed, while the jobs were starting too. */
const liveMismatches: string[] = [];

function checkLiveCount(sim: NodeSimulator, jobs: readonly WorkloadJob[]): ReturnType<typeof convergence> {
  const state = convergence(sim, jobs, NODES);
  const live = [...state.jobs.values()].reduce((a, p) => a + p.live, 0);
  const counted = liveAllocations(sim, jobs);
  if (counted !== live) liveMismatches.push(`${counted} counted, ${live} live (${state.starting} starting)`);
  return state;
}

/** The clients run every job as desired, every node is ready, and the server has nothing unknown or unstarted. */
function converged(s: TestServer, sim: NodeSimulator, jobs: readonly WorkloadJob[]): boolean {
  const notReady = [...nodesTable(s).all()].filter((n) => n.Status !== "ready");
  const rows = [...allocsTable(s).all()];
  const unknown = rows.filter((a) => a.ClientStatus === "unknown").length;
  const pending = rows.filter((a) => a.ClientStatus === "pending" && a.DesiredStatus === "run").length;
  waiting = [
    ...(notReady.length
      ? [`${notReady.length} nodes not ready (${notReady.map((n) => n.Status).join(",")})`]
      : []),
    ...(unknown ? [`${unknown} allocations unknown`] : []),
    ...(pending ? [`${pending} allocations pending`] : []),
    ...checkLiveCount(sim, jobs).waiting,
  ];
  return waiting.length === 0;
}

/** Never both, on the server too: one running allocation per slot (name, and node for system jobs). */
function expectOneRunningPerSlot(s: TestServer, sim: NodeSimulator, jobs: readonly WorkloadJob[]): void {
  const slots = new Map<string, number>();
  for (const a of allocsTable(s).all()) {
    if (a.DesiredStatus !== "run" || a.ClientStatus !== "running") continue;
    const key = `${a.JobID}/${a.Name}/${a.Job?.Type === "system" ? a.NodeID : ""}`;
    slots.set(key, (slots.get(key) ?? 0) + 1);
  }
  expect([...slots].filter(([, n]) => n > 1)).toEqual([]);
  const state = checkLiveCount(sim, jobs);
  expect([...state.jobs.values()].every((p) => p.duplicates === 0)).toBe(true);
  expect(liveMismatches).toEqual([]);
  // What the server stopped no longer runs on any client.
  const stopped = new Set(
    [...allocsTable(s).all()].filter((a) => a.DesiredStatus !== "run").map((a) => a.ID),
  );
  for (const { runner } of sim.runners()) {
    if (stopped.has(runner.ID)) expect(runner.terminal).toBe(true);
  }
}

/** The slots running more than once on the server, each allocation with its node, states and predecessor. */
function duplicateSlots(s: TestServer, waved: ReadonlySet<string>): string[] {
  const slots = new Map<string, string[]>();
  for (const a of allocsTable(s).all()) {
    if (a.DesiredStatus !== "run" || a.ClientStatus !== "running" || a.Job?.Type === "system") continue;
    const list = slots.get(`${a.JobID} ${a.Name}`) ?? [];
    list.push(
      `${a.ID.slice(0, 8)} on ${a.NodeID.slice(0, 8)}${waved.has(a.NodeID) ? " (came back)" : ""}, ` +
        `AllocStates [${a.AllocStates?.map((st) => st.Value).join(",") ?? ""}], PreviousAllocation ${a.PreviousAllocation.slice(0, 8) || "-"}, CreateIndex ${a.CreateIndex}`,
    );
    slots.set(`${a.JobID} ${a.Name}`, list);
  }
  return [...slots]
    .filter(([, l]) => l.length > 1)
    .slice(0, 6)
    .map(([k, l]) => `${k}: ${l.join(" | ")}`);
}

it("converges with the scheduler: every job at its desired count, and after a disconnect wave each allocation reconnected or replaced, never both", async () => {
  const s = await startTestServer({ args: FAST_HEARTBEATS });
  cleanup.push(() => s.stop());

  const sim = new NodeSimulator({
    server: s.url,
    nodes: NODES,
    seed: "convergence",
    initialHeartbeatStaggerMs: 500,
    driver: {
      setup: { min: 5, max: 20 },
      pull: { min: 10, max: 50 },
      start: { min: 20, max: 100 },
      failureRate: 0,
    },
  });
  cleanup.push(() => sim.stop());
  await sim.start();
  await eventually(
    "every node ready",
    () => [...nodesTable(s).all()].filter((n) => n.Status === "ready").length === NODES,
  );

  const jobs = workloadJobs({
    systemJobs: 1,
    serviceJobs: 3,
    serviceCount: 100,
    tolerantShare: 2 / 3,
    batchJobs: 2,
    batchCount: 50,
    batchRunFor: "1h",
  });
  await registerJobs(s.url, jobs);
  await eventually("every job at its desired count", () => converged(s, sim, jobs), 120_000);
  expectOneRunningPerSlot(s, sim, jobs);

  const wave = await sim.disconnectWave({ share: 0.2, durationMs: 6_000 });
  const waved = new Set(wave.nodes);
  await eventually("converged again after the disconnect wave", () => converged(s, sim, jobs), 120_000).catch(
    (err: Error) => {
      throw new Error(`${err.message}: ${waiting.join("; ")}\n${duplicateSlots(s, waved).join("\n")}`);
    },
  );
  expectOneRunningPerSlot(s, sim, jobs);
  // The tolerant services on the nodes that came back were unknown meanwhile; each now runs on
  // (reconnected) or was stopped in favour of its replacement.
  const tolerant = new Set(
    jobs
      .filter(
        (j) => (j.body.Job.TaskGroups as { MaxClientDisconnect?: number | null }[])[0]?.MaxClientDisconnect,
      )
      .map((j) => j.id),
  );
  const wasUnknown = [...allocsTable(s).all()].filter(
    (a) =>
      tolerant.has(a.JobID) && waved.has(a.NodeID) && a.AllocStates?.some((st) => st.Value === "unknown"),
  );
  expect(wasUnknown.length).toBeGreaterThan(0);
  for (const a of wasUnknown) if (a.DesiredStatus === "run") expect(a.ClientStatus).toBe("running");
}, 300_000);
