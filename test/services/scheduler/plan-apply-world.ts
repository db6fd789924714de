import { canonicalizeJob } from "../../../src/jobs/canonicalize.ts";
import type { InProcessPass } from "../../../src/services/scheduler/computed-pass.ts";
import { submitPlan } from "../../../src/services/scheduler/plan-applier.ts";
import { ReadyNodes } from "../../../src/services/scheduler/ready-nodes.ts";
import type { Draft } from "../../../src/store/writer.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import { newEvaluation } from "../../../streams/evals.ts";
import { JOB_REGISTERED_VERSION, type JobRegistered } from "../../../streams/jobs.ts";
import { AT, memoryStore, registered, statusChange } from "../../projections/memory-store.ts";

/** Room for exactly one of the jobs' allocations. */
const ONE_SLOT = {
  NodeResources: { Cpu: { CpuShares: 1000 }, Memory: { MemoryMB: 1000 }, Disk: { DiskMB: 10_000 } },
  Drivers: { docker: { Detected: true, Healthy: true } },
};

/**
 * A memory store with the default namespace (written together with
 * `setup`), for computing plans in process and submitting them to the plan
 * applier by hand: `addNode` adds a ready node with room for one
 * allocation (and the fingerprint `fields` given), `register` a
 * one-allocation service job (with `priority` and group fields if given)
 * and returns its evaluation.
 */
export async function planApplyWorld(...setup: Draft[]) {
  const m = await memoryStore();
  let n = 0;
  const newID = () => `00000000-0000-4000-8000-${String(n++).padStart(12, "0")}`;
  const clock = new VirtualClock(AT);
  await m.write(
    {
      type: "NamespaceUpserted",
      v: 1,
      data: { Namespace: { Name: "default", Description: "", Quota: "", Meta: null, Capabilities: null } },
    },
    ...setup,
  );
  const readyNodes = new ReadyNodes(m.tables.nodes);
  const addNode = async (id: string, fields: Record<string, unknown> = {}) => {
    await m.write(
      registered(id, "aa", { ...ONE_SLOT, ...fields }),
      statusChange(id, "initializing", "ready"),
    );
    readyNodes.invalidate();
  };
  const register = async (id: string, priority?: number, group: Record<string, unknown> = {}) => {
    const evalID = newID();
    const withPriority = priority === undefined ? {} : { Priority: priority };
    const data: JobRegistered = {
      Job: canonicalizeJob({
        ID: id,
        Type: "service",
        ...withPriority,
        Datacenters: ["dc1"],
        Update: { MaxParallel: 0 },
        TaskGroups: [
          {
            Name: "g",
            Count: 1,
            EphemeralDisk: { SizeMB: 10 },
            Tasks: [
              {
                Name: "t",
                Driver: "docker",
                Config: { image: id },
                Resources: { CPU: 800, MemoryMB: 800 },
                LogConfig: { MaxFiles: 1, MaxFileSizeMB: 1 },
              },
            ],
            ...group,
          },
        ],
      }),
      Eval: newEvaluation({
        ID: evalID,
        Namespace: "default",
        Type: "service",
        ...withPriority,
        TriggeredBy: "job-register",
        JobID: id,
        CreateTime: AT * 1e6,
      }),
      EnforceIndex: false,
      JobModifyIndex: 0,
      Submission: null,
    };
    const [out] = await m.write({ type: "JobRegistered", v: JOB_REGISTERED_VERSION, data });
    if (out?.status !== "applied") throw new Error(JSON.stringify(out));
    return m.tables.evals.get(evalID)!;
  };
  const rt = { tables: m.tables, readyNodes, clock, newID, appliedIndex: () => m.store.appliedIndex };
  const write = (drafts: Parameters<Parameters<typeof submitPlan>[0]>[0]) =>
    m.write(...drafts).then((outcomes) => ({ index: outcomes[outcomes.length - 1]!.index, outcomes }));
  /** `legacy`: written as before plans carried their index. */
  const submit = (pass: InProcessPass, legacy = false) =>
    submitPlan(
      write,
      m.tables,
      pass.outcome.plan,
      pass.outcome.followupEvals,
      newID,
      undefined,
      legacy ? undefined : pass.snapshotIndex,
    );
  return { m, rt, addNode, register, submit };
}
