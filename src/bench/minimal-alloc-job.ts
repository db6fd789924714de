import type { AllocJob, AllocTaskGroup } from "../../streams/allocs.ts";

/**
 * The least job snapshot an allocation needs for `newAllocation`: a service
 * job of the default namespace at version 0, priority 50, with `groups`.
 * Benchmarks (and test fixtures) that write placements straight to the log,
 * with no job registered, give their allocations this.
 */
export function minimalAllocJob(id: string, groups: readonly AllocTaskGroup[]): AllocJob {
  return {
    ID: id,
    Namespace: "default",
    Type: "service",
    Priority: 50,
    Version: 0,
    CreateIndex: 1,
    ModifyIndex: 1,
    JobModifyIndex: 1,
    TaskGroups: groups,
  };
}
