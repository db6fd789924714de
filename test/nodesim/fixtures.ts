import { randomUUID } from "node:crypto";
import type { AllocRow } from "../../projections/allocs.ts";
import type { NodeRow } from "../../projections/nodes.ts";
import { type NodeSimOptions, NodeSimulator } from "../../src/nodesim/simulator.ts";
import { writeEvents } from "../../src/store/writer.ts";
import { type AllocJob, type AllocTaskGroup, newAllocation } from "../../streams/allocs.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";

/** Short TTLs so heartbeats and missed heartbeats happen within a test: TTL 1–2 s, grace 1 s. */
export const FAST_HEARTBEATS = [
  "--min-heartbeat-ttl",
  "1s",
  "--max-heartbeats-per-second",
  "1000",
  "--heartbeat-grace",
  "1s",
];

/** A simulated driver that sets up, starts and kills tasks within tens of milliseconds, never failing. */
export const FAST_DRIVER: NodeSimOptions["driver"] = {
  setup: { min: 5, max: 20 },
  pull: { min: 10, max: 50 },
  start: { min: 20, max: 100 },
  kill: { min: 10, max: 50 },
  failureRate: 0,
  eventInterval: 0,
};

/** An allocation's job snapshot with one group of tasks, as the simulated driver reads it. */
export function simJob(
  id: string,
  type: "service" | "batch" | "system",
  group: Partial<AllocTaskGroup> & { tasks?: { Name: string; Config?: Record<string, unknown> }[] } = {},
): AllocJob {
  const { tasks, ...rest } = group;
  return {
    ID: id,
    Namespace: "default",
    Type: type,
    Priority: 50,
    Version: 0,
    CreateIndex: 1,
    ModifyIndex: 1,
    JobModifyIndex: 1,
    TaskGroups: [
      {
        Name: "g",
        Count: 1,
        RestartPolicy: { Attempts: 0, Interval: 0, Delay: 0, Mode: "fail" },
        Tasks: (tasks ?? [{ Name: "main" }]).map((t) => ({ Driver: "mock_driver", Config: {}, ...t })),
        ...rest,
      },
    ],
  };
}

/** Appends one plan result placing `allocs` (as the plan applier will); returns their IDs. */
export async function placeMany(
  server: TestServer,
  allocs: readonly { nodeID: string; job: AllocJob }[],
): Promise<string[]> {
  const now = Date.now();
  const placed = allocs.map(({ nodeID, job }, i) =>
    newAllocation({
      ID: randomUUID(),
      Namespace: "default",
      JobID: job.ID,
      TaskGroup: "g",
      Name: `${job.ID}.g[${i}]`,
      NodeID: nodeID,
      Job: job,
      CreateTime: now * 1e6,
    }),
  );
  const { outcomes } = await writeEvents(server.store, now, { kind: "server", id: "test" }, [
    {
      type: "AllocsPlanApplied",
      v: 1,
      data: { EvalID: "", Placed: placed, Updated: [], Stopped: [], Preempted: [] },
    },
  ]);
  if (outcomes[0]?.status !== "applied") throw new Error(`placement refused: ${JSON.stringify(outcomes[0])}`);
  return placed.map((a) => a.ID);
}

/** Appends a plan result that stops `ids` (desired stop, the client keeps its status). */
export async function stopAllocs(server: TestServer, ids: readonly string[]): Promise<void> {
  const now = Date.now();
  const Stopped = ids.map((ID) => ({
    ID,
    DesiredDescription: "alloc not needed due to job update",
    ClientStatus: "" as const,
    FollowupEvalID: "",
    ModifyTime: now * 1e6,
  }));
  const { outcomes } = await writeEvents(server.store, now, { kind: "server", id: "test" }, [
    {
      type: "AllocsPlanApplied",
      v: 1,
      data: { EvalID: "", Placed: [], Updated: [], Stopped, Preempted: [] },
    },
  ]);
  if (outcomes[0]?.status !== "applied") throw new Error(`stop refused: ${JSON.stringify(outcomes[0])}`);
}

export const allocsTable = (s: TestServer) => s.store.table<AllocRow>("allocs");
export const nodesTable = (s: TestServer) => s.store.table<NodeRow>("nodes");

/** Polls `check` until it returns true; the deadline is a safety net, not a measurement. */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Whether all `nodes` simulated nodes are registered and ready. */
export const allNodesReady = (s: TestServer, nodes: number) =>
  nodesTable(s).size === nodes && [...nodesTable(s).all()].every((n) => n.Status === "ready");

/**
 * A real server and a simulator of `options.nodes` nodes against it, once
 * every node is ready; both are stopped by `cleanup` (run it after each test).
 */
export async function simulatedCluster(
  cleanup: (() => Promise<void>)[],
  serverArgs: string[],
  options: Pick<NodeSimOptions, "nodes" | "seed"> & Partial<NodeSimOptions>,
): Promise<{ s: TestServer; sim: NodeSimulator }> {
  const s = await startTestServer({ args: serverArgs });
  cleanup.push(() => s.stop());
  const sim = new NodeSimulator({
    server: s.url,
    initialHeartbeatStaggerMs: 500,
    driver: FAST_DRIVER,
    ...options,
  });
  cleanup.push(() => sim.stop());
  await sim.start();
  await eventually("every node ready", () => allNodesReady(s, options.nodes));
  return { s, sim };
}
