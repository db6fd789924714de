import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { pino } from "pino";
import type { Subscription } from "rxjs";
import { createProjections, type Projections } from "../../../../projections/index.ts";
import { readyNodeDrafts } from "../../../../src/bench/bench-nodes.ts";
import { c2mJob } from "../../../../src/bench/c2m-job.ts";
import { EnvelopeCodec } from "../../../../src/codec/envelope-codec.ts";
import { canonicalizeJob } from "../../../../src/jobs/canonicalize.ts";
import type { EventLog } from "../../../../src/log/event-log.ts";
import { openLog } from "../../../../src/log/open-log.ts";
import { scheduleGeneric } from "../../../../src/services/scheduler/generic-scheduler.ts";
import { submitPlan } from "../../../../src/services/scheduler/plan-applier.ts";
import { ReadyNodes } from "../../../../src/services/scheduler/ready-nodes.ts";
import type { SchedulerThreads } from "../../../../src/services/scheduler/threads/scheduler-threads.ts";
import { SnapshotFile } from "../../../../src/store/snapshot-file.ts";
import { Store } from "../../../../src/store/store.ts";
import { type Draft, writeEvents } from "../../../../src/store/writer.ts";
import { newEvaluation } from "../../../../streams/evals.ts";
import type { Actor } from "../../../../streams/event-schema.ts";
import { allSchemas } from "../../../../streams/index.ts";
import { JOB_REGISTERED_VERSION, type JobRegistered } from "../../../../streams/jobs.ts";

export const quiet = pino({ level: "silent" });
export const ACTOR: Actor = { kind: "server", id: "test" };

/** A main store on a file log with its snapshot directory, as a server has it. */
export class MainStore {
  readonly codec = new EnvelopeCodec(allSchemas);
  private following: Subscription | undefined;

  private constructor(
    readonly dir: string,
    readonly log: EventLog,
    readonly store: Store,
    readonly tables: Projections["tables"],
    readonly snapshots: SnapshotFile,
  ) {}

  static async open(dir: string): Promise<MainStore> {
    const log = await openLog(`file:${join(dir, "log")}`, { logger: quiet, fsync: "never" });
    const projections = createProjections();
    const snapshots = new SnapshotFile(join(dir, "snapshots"), quiet);
    const store = new Store({
      log,
      codec: new EnvelopeCodec(allSchemas),
      projections: projections.all,
      logger: quiet,
      snapshots,
    });
    await store.start();
    const main = new MainStore(dir, log, store, projections.tables, snapshots);
    await main.write([
      {
        type: "ClusterBootstrapped",
        v: 1,
        data: { ClusterID: randomUUID(), CreateTime: Date.now(), ServerName: "test" },
      },
    ]);
    return main;
  }

  get snapshotDir(): string {
    return this.snapshots.dir;
  }

  write(drafts: readonly Draft[]) {
    return writeEvents(this.store, Date.now(), ACTOR, drafts);
  }

  /** `count` ready nodes (8 GHz, 16 GiB each), written in batches of 500. */
  async addNodes(count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let start = 0; start < count; start += 500) {
      const drafts: Draft[] = [];
      for (let i = start; i < Math.min(count, start + 500); i++) {
        const n = readyNodeDrafts(i);
        ids.push(n.id);
        drafts.push(...n.drafts);
      }
      await this.write(drafts);
    }
    return ids;
  }

  /** Registers a service job of `count` small docker tasks with its evaluation; returns the evaluation's ID. */
  async registerJob(id: string, count: number, cpu = 50): Promise<string> {
    const job = canonicalizeJob({ ...c2mJob(id, count, { cpu }), Namespace: "default" });
    const evaluation = newEvaluation({
      ID: randomUUID(),
      Namespace: "default",
      Priority: job.Priority,
      Type: job.Type,
      TriggeredBy: "job-register",
      JobID: job.ID,
      CreateTime: Date.now() * 1e6,
    });
    const data: JobRegistered = {
      Job: job,
      Eval: evaluation,
      EnforceIndex: false,
      JobModifyIndex: 0,
      Submission: null,
    };
    const { outcomes } = await this.write([{ type: "JobRegistered", v: JOB_REGISTERED_VERSION, data }]);
    if (outcomes[0]?.status !== "applied")
      throw new Error(`job ${id} refused: ${JSON.stringify(outcomes[0])}`);
    return evaluation.ID;
  }

  /** Registers a job and places it with the in-process scheduler, as the server does today. */
  async placeInProcess(id: string, count: number): Promise<void> {
    const evalID = await this.registerJob(id, count);
    const outcome = scheduleGeneric(
      {
        tables: this.tables,
        readyNodes: new ReadyNodes(this.tables.nodes),
        nowMs: Date.now(),
        newID: randomUUID,
      },
      this.tables.evals.get(evalID)!,
      { attempt: 0 },
    );
    await submitPlan((d) => this.write(d), this.tables, outcome.plan, outcome.followupEvals, randomUUID);
  }

  /**
   * Forwards every batch the store applies from now on to `threads` (a file
   * log's tail emits each commit to the store first, then to this), and
   * starts them.
   */
  async startThreads(threads: SchedulerThreads): Promise<SchedulerThreads> {
    this.following?.unsubscribe();
    this.following = this.log
      .tail(this.store.appliedIndex + 1)
      .subscribe({ next: (batch) => threads.applied(batch) });
    return threads.start();
  }

  async close(): Promise<void> {
    this.following?.unsubscribe();
    await this.store.stop();
    await this.log.close();
  }
}
