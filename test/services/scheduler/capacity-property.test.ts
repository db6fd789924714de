import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import { createProjections } from "../../../projections/index.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { seededRandom } from "../../../src/services/scheduler/rng.ts";
import { replayStore } from "../../replay-store.ts";
import { overcommitted, resourceJob, SMALL_NODE } from "./capacity-check.ts";
import { Scenario } from "./scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

function job(id: string, count: number, cpu: number, mem: number, disk: number) {
  return resourceJob({ id, count, cpu, mem, disk });
}

describe("capacity property: concurrent registrations, scale changes and node changes never over-commit a node", () => {
  for (const seed of ["alpha", "beta", "gamma"]) {
    it(`holds after every applied record (seed ${seed})`, async () => {
      const random = seededRandom(seed);
      const pick = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
      const s = await Scenario.start();
      scenarios.push(s);
      for (let i = 0; i < 6; i++) await s.addNode(SMALL_NODE);

      // Checked live too, batch by batch, while it all races.
      const liveViolations: string[] = [];
      const nodesTable = s.server.store.table<NodeRow>("nodes");
      const allocsTable = s.server.store.table<AllocRow>("allocs");
      const sub = s.server.store.applied$.subscribe(() => {
        liveViolations.push(...overcommitted(nodesTable.all(), (id) => allocsTable.by("node", id)));
      });

      const jobs = Array.from({ length: 14 }, (_, i) => ({
        id: `job-${i}`,
        cpu: pick(200, 900),
        mem: pick(128, 900),
        disk: pick(100, 1500),
      }));
      const writes: Promise<unknown>[] = [];
      for (const j of jobs)
        writes.push(s.call("/v1/jobs", "PUT", { Job: job(j.id, pick(1, 5), j.cpu, j.mem, j.disk) }));
      for (let round = 0; round < 3; round++) {
        for (const j of jobs.filter(() => random() < 0.5)) {
          writes.push(s.call("/v1/jobs", "PUT", { Job: job(j.id, pick(0, 6), j.cpu, j.mem, j.disk) }));
        }
        if (round === 0) writes.push(s.addNode(SMALL_NODE));
        if (round === 1) {
          const n = s.nodes[pick(0, s.nodes.length - 1)]!;
          writes.push(s.call(`/v1/node/${n.id}/drain`, "PUT", { DrainSpec: { Deadline: -1 } }));
        }
        if (round === 2) {
          const n = s.nodes[pick(0, s.nodes.length - 1)]!;
          writes.push(s.call(`/v1/node/${n.id}/eligibility`, "PUT", { Eligibility: "ineligible" }));
        }
        await new Promise((r) => setImmediate(r));
      }
      const results = await Promise.all(writes);
      for (const r of results) {
        if (r && typeof r === "object" && "status" in r)
          expect((r as { status: number }).status).toBeLessThan(500);
      }
      await s.idle();
      sub.unsubscribe();
      expect(liveViolations).toEqual([]);
      expect(allocsTable.size).toBeGreaterThan(0);

      // Replay the log record by record; after each one, every node an
      // allocation changed on must still fit what runs there.
      const projections = createProjections();
      const replay = replayStore(s.server.log, projections);
      const touched = new Set<string>();
      const changes = replay.change$.subscribe((c) => {
        if (c.table === "allocs") touched.add(((c.after ?? c.before) as AllocRow).NodeID);
      });
      const violations: string[] = [];
      const last = s.server.log.lastIndex();
      for (let i = 1; i <= last; i++) {
        await replay.advanceTo(i);
        if (touched.size === 0) continue;
        const nodes = [...touched]
          .map((id) => projections.tables.nodes.get(id))
          .filter((n): n is NodeRow => !!n);
        for (const v of overcommitted(nodes, (id) => projections.tables.allocs.by("node", id)))
          violations.push(`#${i}: ${v}`);
        touched.clear();
      }
      changes.unsubscribe();
      expect(violations).toEqual([]);
      expect(replay.hash()).toBe(s.server.store.hash());
    });
  }
});
