import type { JobRow, JobSummaryRow } from "../../projections/jobs.ts";
import { PeriodicDispatcher } from "../../src/services/periodic-dispatcher.ts";
import type { TestServer } from "../server-harness.ts";

/** A batch job of one small docker task, every minute unless `periodic` says otherwise. */
export function periodicJob(
  id: string,
  periodic: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
) {
  return {
    ID: id,
    Type: "batch",
    Datacenters: ["dc1"],
    Meta: { team: "data" },
    Periodic: {
      Enabled: true,
      Spec: "* * * * *",
      SpecType: "cron",
      ProhibitOverlap: false,
      TimeZone: "UTC",
      ...periodic,
    },
    TaskGroups: [
      {
        Name: "run",
        Count: 1,
        Tasks: [
          {
            Name: "main",
            Driver: "docker",
            Config: { image: "busybox" },
            Resources: { CPU: 100, MemoryMB: 64 },
          },
        ],
      },
    ],
    ...extra,
  };
}

/** A parameterized batch job: `customer` required, `region` optional. */
export function parameterizedJob(
  id: string,
  config: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
) {
  return periodicJob(
    id,
    {},
    {
      Periodic: null,
      ParameterizedJob: {
        Payload: "optional",
        MetaRequired: ["customer"],
        MetaOptional: ["region"],
        ...config,
      },
      ...extra,
    },
  );
}

export function dispatcherOf(server: TestServer): PeriodicDispatcher {
  const d = server.services.find((s) => s instanceof PeriodicDispatcher);
  if (!d) throw new Error("no periodic dispatcher");
  return d as PeriodicDispatcher;
}

/** The children of `parentID`, oldest first. */
export function childrenOf(server: TestServer, parentID: string, namespace = "default"): JobRow[] {
  return [...server.store.table<JobRow>("jobs").all()]
    .filter((j) => j.Namespace === namespace && j.ParentID === parentID)
    .sort((a, b) => a.CreateIndex - b.CreateIndex);
}

export function childrenSummary(server: TestServer, parentID: string, namespace = "default") {
  return server.store.table<JobSummaryRow>("job_summary").get(`${namespace}\u0000${parentID}`)?.Children;
}
