import { createHash } from "node:crypto";
import type { EvaluationRow } from "../../projections/evals.ts";
import type { Projections } from "../../projections/index.ts";
import { newEvaluation } from "../../streams/evals.ts";
import { JOB_REGISTERED_VERSION, type JobRegistered } from "../../streams/jobs.ts";
import { NODE_REGISTERED_VERSION, type NodeSpec } from "../../streams/nodes.ts";
import { canonicalizeJob } from "../jobs/canonicalize.ts";
import { computeNodeClass } from "../nodes/computed-class.ts";
import { hashNodeSecret } from "../nodes/node-secret.ts";
import { submitPlan } from "../services/scheduler/plan-applier.ts";
import { ReadyNodes } from "../services/scheduler/ready-nodes.ts";
import type { ScheduleOutcome, SchedulerContext } from "../services/scheduler/scheduler-context.ts";
import type { Store } from "../store/store.ts";
import { type Draft, writeEvents } from "../store/writer.ts";
import { benchNode } from "./bench-nodes.ts";
import { startMemoryStore } from "./memory-store.ts";

const NOW_MS = 1_700_000_000_000;
const actor = { kind: "server", id: "placement" } as const;

/** A UUID-shaped ID fixed by a label and a number: the same world gets the same IDs, so it places alike. */
export function fixedID(label: string, n: number): string {
  const h = createHash("sha256").update(`${label}/${n}`).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** A UUID-shaped ID from a counter: cheap enough to stand for the scheduler's random IDs in a measurement. */
const counterID = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;

/**
 * Tables with nodes and jobs in them and no scheduler running: the
 * scheduler's functions are called on them directly (the placement
 * benchmark, the placement tests). Every ID is derived from a counter.
 */
export class PlacementWorld {
  private ids = 0;
  private nodeCount = 0;
  private evals = 0;
  private plans = 0;
  readonly readyNodes: ReadyNodes;

  private constructor(
    private readonly store: Store,
    readonly tables: Projections["tables"],
  ) {
    this.readyNodes = new ReadyNodes(tables.nodes);
  }

  static async start(): Promise<PlacementWorld> {
    const { store, tables } = await startMemoryStore();
    const world = new PlacementWorld(store, tables);
    await world.write([
      {
        type: "ClusterBootstrapped",
        v: 1,
        data: { ClusterID: fixedID("cluster", 0), CreateTime: 0, ServerName: "placement" },
      },
    ]);
    return world;
  }

  stop(): Promise<void> {
    return this.store.stop();
  }

  /** A context whose new IDs restart from `from` (two computations from equal contexts decide alike). */
  ctx(from = 0): SchedulerContext {
    this.ids = from;
    return {
      tables: this.tables,
      readyNodes: this.readyNodes,
      nowMs: NOW_MS,
      newID: () => counterID(this.ids++),
    };
  }

  /** `count` ready nodes (8 GHz, 16 GiB, docker) unless `shape` says otherwise; answers their IDs. */
  async addNodes(count: number, shape: (i: number) => Partial<NodeSpec> = () => ({})): Promise<string[]> {
    const ids: string[] = [];
    for (let start = 0; start < count; start += 500) {
      const drafts: Draft[] = [];
      for (let i = start; i < Math.min(count, start + 500); i++) {
        const n = this.nodeCount++;
        const spec: NodeSpec = { ...benchNode(fixedID("node", n), `node-${n}`), ...shape(i) };
        ids.push(spec.ID);
        drafts.push(
          {
            type: "NodeRegistered",
            v: NODE_REGISTERED_VERSION,
            data: {
              Node: { ...spec, ComputedClass: computeNodeClass(spec) },
              SecretIDHash: hashNodeSecret(fixedID("secret", n)),
            },
          },
          {
            type: "NodeStatusUpdated",
            v: 1,
            data: {
              NodeID: spec.ID,
              Status: "ready",
              PreviousStatus: "initializing",
              Cause: "heartbeat",
              NodeEvent: null,
            },
          },
        );
      }
      await this.write(drafts);
    }
    this.readyNodes.invalidate();
    return ids;
  }

  /** Registers a job (Nomad's API shape) with its evaluation; answers the evaluation's row. */
  async registerJob(input: Record<string, unknown>): Promise<EvaluationRow> {
    const job = canonicalizeJob({ Namespace: "default", Datacenters: ["dc1"], ...input });
    const data: JobRegistered = {
      Job: job,
      Eval: newEvaluation({
        ID: fixedID("eval", this.evals++),
        Namespace: job.Namespace,
        Type: job.Type,
        TriggeredBy: "job-register",
        JobID: job.ID,
        CreateTime: NOW_MS * 1e6,
      }),
      EnforceIndex: false,
      JobModifyIndex: 0,
      Submission: null,
    };
    const written = await this.write([{ type: "JobRegistered", v: JOB_REGISTERED_VERSION, data }]);
    const refused = written.outcomes.find((o) => o.status === "rejected");
    if (refused?.status === "rejected") throw new Error(`job ${job.ID} refused: ${refused.reason}`);
    const row = this.tables.evals.get(data.Eval!.ID);
    if (!row) throw new Error(`job ${job.ID} registered without its evaluation`);
    return row;
  }

  /** Writes an outcome's plan as the worker would, and waits until it is applied. */
  async apply(outcome: ScheduleOutcome): Promise<void> {
    await submitPlan(
      (drafts) => this.write(drafts),
      this.tables,
      outcome.plan,
      outcome.followupEvals,
      () => fixedID("plan", this.plans++),
    );
  }

  private write(drafts: readonly Draft[]) {
    return writeEvents(this.store, NOW_MS, actor, drafts);
  }
}
