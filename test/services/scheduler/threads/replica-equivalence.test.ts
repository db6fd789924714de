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
import { playWholeStory, Scenario } from "../scenario.ts";

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

    await playWholeStory(s);
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
