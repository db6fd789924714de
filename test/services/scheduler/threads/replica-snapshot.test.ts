import { readFile } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../../../projections/allocs.ts";
import { createProjections } from "../../../../projections/index.ts";
import type { JobRow } from "../../../../projections/jobs.ts";
import {
  replicaProjections,
  tablesOf,
} from "../../../../src/services/scheduler/threads/replica-projections.ts";
import { decodeTables } from "../../../../src/services/scheduler/threads/replica-snapshot.ts";
import { decodeSnapshot } from "../../../../src/store/snapshot-file.ts";
import { useTempDirs } from "../../../store/helpers.ts";
import { MainStore } from "./fixture.ts";

const tempDir = useTempDirs();
const opened: MainStore[] = [];
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close();
});

const TABLES = new Set(tablesOf(replicaProjections(createProjections().all)));

function rowsOf<R>(data: ReturnType<typeof decodeTables>, table: string): R[] {
  for (const p of data.projections) for (const t of p.tables) if (t.name === table) return t.rows as R[];
  return [];
}

describe("a replica's snapshot", () => {
  it("keeps only the replica's tables, rows as written, allocations sharing their job version", async () => {
    const main = await MainStore.open(await tempDir());
    opened.push(main);
    await main.addNodes(10);
    await main.placeInProcess("web", 20);
    // A new version of the same job: the allocations move to it in place, five more are placed.
    await main.placeInProcess("web", 25);
    await main.store.snapshot();
    const [index] = await main.snapshots.indexes();
    const bytes = await readFile(main.snapshots.pathOf(index!));

    const data = decodeTables(bytes, TABLES);
    const whole = decodeSnapshot(bytes);
    expect(rowsOf(data, "history")).toEqual([]);
    expect(rowsOf(whole, "history").length).toBeGreaterThan(0);
    for (const t of TABLES) expect(rowsOf(data, t)).toEqual(rowsOf(whole, t));

    const versions = rowsOf<JobRow>(data, "job_versions");
    const allocs = rowsOf<AllocRow>(data, "allocs");
    expect(allocs).toHaveLength(25);
    for (const a of allocs) expect(versions).toContain(a.Job);
    expect(new Set(allocs.map((a) => a.Job)).size).toBe(new Set(allocs.map((a) => a.Job!.Version)).size);
  });
});
