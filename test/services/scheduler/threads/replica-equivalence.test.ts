import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createProjections } from "../../../../projections/index.ts";
import { EnvelopeCodec } from "../../../../src/codec/envelope-codec.ts";
import {
  replicaProjections,
  tablesOf,
} from "../../../../src/services/scheduler/threads/replica-projections.ts";
import { SchedulerThreads } from "../../../../src/services/scheduler/threads/scheduler-threads.ts";
import { tablesHash } from "../../../../src/services/scheduler/threads/tables-hash.ts";
import { allSchemas } from "../../../../streams/index.ts";
import { Scenario, serviceJob } from "../scenario.ts";

const HOUR_NS = 3_600_000_000_000;
const HEALTHY = { DeploymentStatus: { Healthy: true, Timestamp: "2025-11-22T08:00:00Z" } };
const TABLES = tablesOf(replicaProjections(createProjections().all));

const opened: { stop?(): Promise<void>; close?(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await (o.close?.() ?? o.stop?.());
});

describe("a scheduler replica", () => {
  it("follows a whole story (disconnect, reconnect, new version, drain, purge, GC) table for table", async () => {
    const s = await Scenario.start();
    opened.push(s);
    // Started before anything happens: everything after reaches it live.
    const threads = new SchedulerThreads({
      workers: 1,
      store: s.server.store,
      logger: pino({ level: "silent" }),
    });
    opened.push(threads);
    const following = s.server.log.tail(s.server.store.appliedIndex + 1).subscribe((b) => threads.applied(b));
    opened.push({ close: async () => following.unsubscribe() });
    await threads.start();

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
        {
          Name: "b",
          Count: 2,
          Tasks: [{ Name: "b", Driver: "exec", Resources: { CPU: 100, MemoryMB: 64 } }],
        },
      ],
    });
    await s.idle();
    await s.report(s.allocs("web"), "running", HEALTHY);
    await s.report(s.allocs("etl"), "complete");
    await s.report(s.allocs("agent"), "running");
    const a1 = s.allocs("web")[0]!;
    const away = s.nodes.find((n) => n.id === a1.NodeID)!;
    s.silent.add(away.id);
    await s.advance(35_000);
    await away.heartbeat();
    await s.updateAllocs(away, [a1], "running");
    s.silent.delete(away.id);
    await s.advance(10_000);
    await s.register(serviceJob("web", 4, {}, { MaxClientDisconnect: HOUR_NS, Meta: { v: "2" } }));
    await s.idle();
    await s.report(
      s.live("web").filter((a) => a.ClientStatus === "pending"),
      "running",
      HEALTHY,
    );
    await s.call(`/v1/node/${s.nodes[1]!.id}/drain`, "PUT", { DrainSpec: { Deadline: -1 } });
    await s.advance(30_000);
    expect((await s.call("/v1/job/etl?purge=true", "DELETE")).status).toBe(200);
    await s.idle();
    expect((await s.call("/v1/system/gc", "PUT")).status).toBe(200);
    await s.idle();

    const types = new Set<string>();
    const codec = new EnvelopeCodec(allSchemas);
    for await (const b of s.server.log.read(1)) for (const r of b) types.add(codec.decode(r.bytes).type);
    for (const t of [
      "AllocsPlanApplied",
      "AllocsDisconnected",
      "NodeDrainUpdated",
      "JobDeregistered",
      "GarbageCollected",
    ])
      expect(types).toContain(t);

    const index = s.server.store.appliedIndex;
    const main = tablesHash(TABLES, (n) => s.server.store.table(n));
    expect(await threads.hashes(index)).toEqual([{ index, hash: main }]);

    // A replica started now replays the same log from its first record to the same tables.
    const late = new SchedulerThreads({
      workers: 1,
      store: s.server.store,
      logger: pino({ level: "silent" }),
    });
    opened.push(late);
    await late.start();
    expect(await late.hashes(index)).toEqual([{ index, hash: main }]);
  }, 60_000);
});
