import { expect } from "vitest";
import { TestNode } from "../api/node-fixtures.ts";
import type { TestServer } from "../server-harness.ts";
import { serviceJob } from "../services/scheduler/scenario.ts";

/** Where a simulated client sends its calls; tests move it when the server restarts on another port. */
export interface Target {
  url: string;
}

export interface NodeView {
  readonly ID: string;
  readonly Status: string;
}

export interface AllocView {
  readonly ID: string;
  readonly NodeID: string;
  readonly JobID: string;
  readonly ClientStatus: string;
  readonly DesiredStatus: string;
}

/** A Nomad client node that talks to whatever server `target` names now. */
export function clientNode(target: Target, node?: { id: string; secret: string }): TestNode {
  // TestNode only ever calls `call`.
  const server = { call: (path: string, init?: RequestInit) => fetch(target.url + path, init) };
  return new TestNode(server as unknown as TestServer, node);
}

/** Registers `node` with a docker driver and room for a few allocations, and heartbeats it ready. */
export async function registerReadyNode(node: TestNode): Promise<void> {
  const reg = await node.register({
    Drivers: { docker: { Detected: true, Healthy: true } },
    NodeResources: { Cpu: { CpuShares: 4000 }, Memory: { MemoryMB: 8192 }, Disk: { DiskMB: 100_000 } },
  });
  expect(reg.status, reg.text).toBe(200);
  const hb = await node.heartbeat();
  expect(hb.status, hb.text).toBe(200);
}

export async function getJson<T>(target: Target, path: string): Promise<T> {
  const res = await fetch(target.url + path);
  if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/**
 * Registers a one-allocation service job, waits for its placement on one
 * of `nodes`, and reports it running from that node as its client would;
 * returns the allocation's ID.
 */
export async function runJob(target: Target, nodes: readonly TestNode[], jobId: string): Promise<string> {
  const res = await fetch(`${target.url}/v1/jobs`, {
    method: "PUT",
    body: JSON.stringify({ Job: serviceJob(jobId, 1, { Update: { MaxParallel: 0 } }) }),
  });
  expect(res.status, await res.text()).toBe(200);
  let index = 0;
  let alloc: AllocView | undefined;
  // A deadline, not a number of tries: every allocation change in the
  // cluster wakes the blocking query, and on a loaded machine many may come
  // before this job's placement. The deadline is a safety net, not a measurement.
  const deadline = Date.now() + 60_000;
  while (!alloc) {
    if (Date.now() > deadline) throw new Error(`job ${jobId} was never placed`);
    const page = await fetch(`${target.url}/v1/job/${jobId}/allocations?index=${index}&wait=5s`);
    index = Number(page.headers.get("x-nomad-index"));
    alloc = ((await page.json()) as AllocView[])[0];
  }
  const node = nodes.find((n) => n.id === alloc.NodeID);
  if (!node) throw new Error(`job ${jobId} was placed on an unknown node ${alloc.NodeID}`);
  const update = await node.rpc("Node.UpdateAlloc", {
    Alloc: [{ ID: alloc.ID, NodeID: node.id, ClientStatus: "running" }],
  });
  expect(update.status, update.text).toBe(200);
  return alloc.ID;
}

/** Nodes by status, and allocations by job, client status and desired status: what a restart must not change. */
export async function clusterCensus(target: Target): Promise<{ nodes: string[]; allocs: string[] }> {
  const nodes = await getJson<NodeView[]>(target, "/v1/nodes");
  const allocs = await getJson<AllocView[]>(target, "/v1/allocations");
  return {
    nodes: nodes.map((n) => `${n.ID} ${n.Status}`).sort(),
    allocs: allocs.map((a) => `${a.JobID} ${a.ID} ${a.ClientStatus}/${a.DesiredStatus}`).sort(),
  };
}

/** Heartbeats every node every 300 ms wherever `target` points, until stopped; failures while the server is down are expected. */
export function heartbeatLoop(nodes: readonly TestNode[]): { stop(): Promise<void> } {
  let running = true;
  const done = (async () => {
    while (running) {
      await Promise.all(nodes.map((n) => n.heartbeat().catch(() => undefined)));
      await new Promise((r) => setTimeout(r, 300));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done;
    },
  };
}
