import { describe, expect, it } from "vitest";
import { createProjections } from "../../../../projections/index.ts";
import {
  replicaProjections,
  SCHEDULER_TABLES,
  tablesOf,
} from "../../../../src/services/scheduler/threads/replica-projections.ts";

describe("the projections a scheduler replica applies", () => {
  const all = createProjections().all;
  const kept = replicaProjections(all);
  const names = kept.map((p) => p.name);

  it("hold every table the scheduler reads", () => {
    const tables = tablesOf(kept);
    for (const t of SCHEDULER_TABLES) expect(tables).toContain(t);
  });

  it("are closed under what their apply depends on, and keep the store's order", () => {
    const set = new Set(kept);
    const owner = new Map(all.flatMap((p) => p.tables.map((t) => [t.name, p] as const)));
    for (const p of kept) {
      for (const r of p.reads ?? []) expect(names).toContain(r);
      for (const t of p.observes ?? []) expect(set.has(owner.get(t)!)).toBe(true);
    }
    // The leadership fence, and garbage collection, which deletes rows of the replicated tables.
    expect(names).toContain("leadership");
    expect(names).toContain("gc");
    expect(names).toEqual(all.map((p) => p.name).filter((n) => names.includes(n)));
  });

  it("leave out what the scheduler never reads", () => {
    for (const n of [
      "history",
      "acl",
      "acl-sso",
      "root-keys",
      "scaling",
      "job-submissions",
      "service_registrations",
    ])
      expect(names).not.toContain(n);
  });
});
