import { expect } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import type { EvaluationRow } from "../../../projections/evals.ts";
import type { JobRow } from "../../../projections/jobs.ts";
import { DeploymentWatcher } from "../../../src/services/deployment-watcher.ts";
import { NodeDrainer } from "../../../src/services/node-drainer.ts";
import { SchedulerService } from "../../../src/services/scheduler/scheduler-service.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import { settle, TestNode } from "../../api/node-fixtures.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";

export const SECOND_NS = 1_000_000_000;

/** A server on virtual time with simulated client nodes that heartbeat as time moves. */
export class Scenario {
  readonly nodes: TestNode[] = [];
  /** Nodes that stopped talking to the server (a network partition). */
  readonly silent = new Set<string>();
  private readonly bodies = new Map<string, Record<string, unknown>>();

  private constructor(
    readonly server: TestServer,
    readonly clock: VirtualClock,
  ) {}

  /** `args`: the server's flags, on top of the harness's (`--scheduler-workers 3` for one on threads). */
  static async start(args: string[] = []): Promise<Scenario> {
    const clock = new VirtualClock();
    const server = await startTestServer({ args, deps: { clock } });
    return new Scenario(server, clock);
  }

  get scheduler(): SchedulerService {
    const s = this.server.services.find((x) => x instanceof SchedulerService);
    if (!s) throw new Error("no scheduler service");
    return s as SchedulerService;
  }

  get deployments(): DeploymentWatcher {
    const s = this.server.services.find((x) => x instanceof DeploymentWatcher);
    if (!s) throw new Error("no deployment watcher");
    return s as DeploymentWatcher;
  }

  get drainer(): NodeDrainer {
    const s = this.server.services.find((x) => x instanceof NodeDrainer);
    if (!s) throw new Error("no node drainer");
    return s as NodeDrainer;
  }

  async stop(): Promise<void> {
    await this.server.stop();
  }

  /** A ready node with the docker driver and room for 4000 MHz, 8 GiB and 100 GiB. */
  async addNode(extra: Record<string, unknown> = {}): Promise<TestNode> {
    const node = new TestNode(this.server);
    this.bodies.set(node.id, {
      Drivers: { docker: { Detected: true, Healthy: true }, exec: { Detected: true, Healthy: true } },
      NodeResources: { Cpu: { CpuShares: 4000 }, Memory: { MemoryMB: 8192 }, Disk: { DiskMB: 100_000 } },
      ...extra,
    });
    const reg = await this.reRegister(node);
    expect(reg.status, reg.text).toBe(200);
    const hb = await node.heartbeat();
    expect(hb.status, hb.text).toBe(200);
    this.nodes.push(node);
    return node;
  }

  /** Node.Register with the node's fingerprint, as a client sends it again on every (re)start. */
  reRegister(node: TestNode) {
    return node.register(this.bodies.get(node.id) ?? {});
  }

  /** Node.UpdateAlloc from one node, answered as is (a refusal is not an error here). */
  updateAllocs(
    node: TestNode,
    allocs: readonly { ID: string }[],
    status: string,
    extra: Record<string, unknown> = {},
  ) {
    return settle(
      this.clock,
      node.rpc("Node.UpdateAlloc", {
        Alloc: allocs.map((a) => ({ ID: a.ID, NodeID: node.id, ClientStatus: status, ...extra })),
      }),
    );
  }

  async call(
    path: string,
    method = "GET",
    body?: unknown,
  ): Promise<{ status: number; body: unknown; text: string; index: number }> {
    const res = await this.server.call(path, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get("content-type") ?? "").startsWith("application/json")) parsed = JSON.parse(text);
    return { status: res.status, body: parsed, text, index: Number(res.headers.get("x-nomad-index") ?? 0) };
  }

  async register(
    job: Record<string, unknown>,
  ): Promise<{ EvalID: string; JobModifyIndex: number; Index: number }> {
    const res = await this.call("/v1/jobs", "PUT", { Job: job });
    expect(res.status, res.text).toBe(200);
    return res.body as { EvalID: string; JobModifyIndex: number; Index: number };
  }

  /**
   * Waits until the scheduler has nothing left to do with what the log holds
   * (no evaluation ready or in flight, no bookkeeping write pending, every
   * record applied). Virtual time does not move meanwhile.
   */
  async idle(): Promise<void> {
    let quiet = 0;
    const deadline = Date.now() + 30_000;
    for (let i = 0; Date.now() < deadline; i++) {
      await this.server.store.caughtUp();
      // A timer that fired may still be on its way to the log (a missed
      // heartbeat's write): quiet means quiet across a few real milliseconds.
      await new Promise((r) => (quiet > 0 || i % 20 === 19 ? setTimeout(r, 2) : setImmediate(r)));
      const caughtUp = this.server.store.appliedIndex === this.server.log.lastIndex();
      if (caughtUp && this.scheduler.idle && this.drainer.idle && this.deployments.idle) {
        if (++quiet >= 3) return;
      } else quiet = 0;
    }
    throw new Error(`the scheduler never went idle: ${JSON.stringify(this.scheduler.evalBroker?.stats())}`);
  }

  /** Moves virtual time, heartbeating every node that is not silent, and lets the scheduler catch up. */
  async advance(ms: number, step = 5_000): Promise<void> {
    for (let left = ms; left > 0; left -= step) {
      this.clock.advance(Math.min(step, left));
      for (const n of this.nodes) {
        if (this.silent.has(n.id)) continue;
        const hb = await n.heartbeat();
        expect(hb.status, hb.text).toBe(200);
      }
      await this.idle();
    }
  }

  /** Reports the given allocations' client status from their nodes. */
  async report(
    allocs: readonly AllocRow[],
    status: string,
    extra: Record<string, unknown> = {},
  ): Promise<void> {
    const byNode = new Map<string, AllocRow[]>();
    for (const a of allocs) byNode.set(a.NodeID, [...(byNode.get(a.NodeID) ?? []), a]);
    for (const [nodeID, list] of byNode) {
      const node = this.nodes.find((n) => n.id === nodeID);
      if (!node) throw new Error(`no test node ${nodeID}`);
      const res = await settle(
        this.clock,
        node.rpc("Node.UpdateAlloc", {
          Alloc: list.map((a) => ({ ID: a.ID, NodeID: nodeID, ClientStatus: status, ...extra })),
        }),
      );
      expect(res.status, res.text).toBe(200);
    }
    await this.idle();
  }

  allocs(jobID: string, namespace = "default"): AllocRow[] {
    return this.server.store
      .table<AllocRow>("allocs")
      .by("job", `${namespace}\u0000${jobID}`)
      .sort((a, b) => a.CreateIndex - b.CreateIndex || (a.ID < b.ID ? -1 : 1));
  }

  live(jobID: string): AllocRow[] {
    return this.allocs(jobID).filter(
      (a) => a.DesiredStatus === "run" && !["complete", "failed", "lost"].includes(a.ClientStatus),
    );
  }

  evals(jobID: string): EvaluationRow[] {
    return this.server.store
      .table<EvaluationRow>("evals")
      .by("job", `default\u0000${jobID}`)
      .sort((a, b) => a.CreateIndex - b.CreateIndex);
  }

  job(jobID: string): JobRow | undefined {
    return this.server.store.table<JobRow>("jobs").get(`default\u0000${jobID}`);
  }
}

/** A service job with one group of `count` docker tasks asking 500 MHz and 256 MB. */
export function serviceJob(
  id: string,
  count: number,
  extra: Record<string, unknown> = {},
  group: Record<string, unknown> = {},
) {
  return {
    ID: id,
    Type: "service",
    Datacenters: ["dc1"],
    TaskGroups: [
      {
        Name: "web",
        Count: count,
        Tasks: [
          {
            Name: "server",
            Driver: "docker",
            Config: { image: "nginx" },
            Resources: { CPU: 500, MemoryMB: 256 },
          },
        ],
        ...group,
      },
    ],
    ...extra,
  };
}

const HOUR_NS = 3_600_000_000_000;
const HEALTHY = { DeploymentStatus: { Healthy: true, Timestamp: "2025-11-22T08:00:00Z" } };

/**
 * A cluster's life in one story, for tests that compare what it leaves in
 * the log with the tables (replay, replicas): four nodes; a service, a
 * system and a batch job; a disconnect, a replacement and a reconnect; a
 * new version and a scale-up; a drain; a purge.
 */
export async function playWholeStory(s: Scenario): Promise<void> {
  for (let i = 0; i < 4; i++) await s.addNode();
  await s.register(serviceJob("web", 3, {}, { MaxClientDisconnect: HOUR_NS }));
  await s.register({
    ID: "agent",
    Type: "system",
    TaskGroups: [
      { Name: "a", Tasks: [{ Name: "a", Driver: "exec", Resources: { CPU: 100, MemoryMB: 64 } }] },
    ],
  });
  await s.register({
    ID: "etl",
    Type: "batch",
    TaskGroups: [
      { Name: "b", Count: 2, Tasks: [{ Name: "b", Driver: "exec", Resources: { CPU: 100, MemoryMB: 64 } }] },
    ],
  });
  await s.idle();
  await s.report(s.allocs("web"), "running", HEALTHY);
  await s.report(s.allocs("etl"), "complete");
  await s.report(s.allocs("agent"), "running");

  // A disconnect, a replacement, a reconnect.
  const a1 = s.allocs("web")[0]!;
  const away = s.nodes.find((n) => n.id === a1.NodeID)!;
  s.silent.add(away.id);
  await s.advance(35_000);
  await away.heartbeat();
  await s.updateAllocs(away, [a1], "running");
  s.silent.delete(away.id);
  await s.advance(10_000);
  // A new version, a scale-up, a drain.
  await s.register(serviceJob("web", 4, {}, { MaxClientDisconnect: HOUR_NS, Meta: { v: "2" } }));
  await s.idle();
  await s.report(
    s.live("web").filter((a) => a.ClientStatus === "pending"),
    "running",
    HEALTHY,
  );
  await s.call(`/v1/node/${s.nodes[1]!.id}/drain`, "PUT", { DrainSpec: { Deadline: -1 } });
  await s.advance(30_000);
  const purged = await s.call("/v1/job/etl?purge=true", "DELETE");
  expect(purged.status, purged.text).toBe(200);
  await s.idle();
}
