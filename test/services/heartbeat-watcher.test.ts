import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import { loadConfig } from "../../src/config.ts";
import { HeartbeatWatcher, missedHeartbeat } from "../../src/services/heartbeat-watcher.ts";
import { writeEvents } from "../../src/store/writer.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import { HOUR_NS, testJob } from "../api/node-fixtures.ts";
import {
  alloc,
  clientUpdate,
  memoryStore,
  placed,
  registered,
  statusChange,
} from "../projections/memory-store.ts";

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

async function watcher(
  options: {
    failover?: boolean;
    random?: number;
    args?: string[];
    before?: (m: Awaited<ReturnType<typeof memoryStore>>) => Promise<void>;
  } = {},
) {
  const m = await memoryStore();
  await options.before?.(m);
  const clock = new VirtualClock();
  const config = await loadConfig(
    [
      "--min-heartbeat-ttl",
      "10s",
      "--heartbeat-grace",
      "10s",
      "--failover-heartbeat-ttl",
      "5m",
      ...(options.args ?? []),
    ],
    {},
  );
  const w = new HeartbeatWatcher({ random: () => options.random ?? 0 });
  w.start({
    config,
    store: m.store,
    tables: m.tables,
    clock,
    logger: pino({ level: "silent" }),
    failover: options.failover ?? false,
    write: (drafts) => writeEvents(m.store, clock.now(), { kind: "server", id: "test" }, drafts),
  });
  stops.push(() => w.stop());
  /** Lets the expiry's write reach the tables. */
  const settled = async () => {
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    await m.store.caughtUp();
  };
  return { ...m, clock, w, settled };
}

describe("heartbeat watcher", () => {
  it("scales the TTL with the number of nodes and adds a stagger below it", async () => {
    const { w } = await watcher({ args: ["--max-heartbeats-per-second", "0.5"], random: 0.5 });
    expect(w.reset("n0")).toBe(15_000); // 10 s minimum, + half of it
    for (let i = 1; i < 10; i++) w.reset(`n${i}`);
    expect(w.tracked).toBe(10);
    // 10 nodes at 0.5 heartbeats per second: 20 s, + half of it.
    expect(w.reset("n0")).toBe(30_000);
  });

  it("moves a deadline on every heartbeat without piling up timers, and expires once it passes", async () => {
    const { w, clock, tables, settled, write } = await watcher();
    await write(registered("n1"), statusChange("n1", "initializing", "ready"));
    for (let i = 0; i < 100; i++) {
      expect(w.reset("n1")).toBe(10_000);
      clock.advance(1_000);
    }
    expect(clock.pending).toBe(1);
    await settled();
    expect(tables.nodes.get("n1")!.Status).toBe("ready");
    // The last heartbeat was 1 s ago: its deadline is TTL + grace = 20 s after it.
    clock.advance(18_999);
    await settled();
    expect(tables.nodes.get("n1")!.Status).toBe("ready");
    clock.advance(2);
    await settled();
    expect(tables.nodes.get("n1")!.Status).toBe("down");
    expect(w.tracked).toBe(0);
  });

  it("gives every live node the failover TTL when it takes over leadership", async () => {
    const { clock, tables, settled } = await watcher({
      failover: true,
      before: async (m) => {
        await m.write(registered("n1"), statusChange("n1", "initializing", "ready"), registered("n2"));
        await m.write(registered("gone"), statusChange("gone", "initializing", "down"));
      },
    });
    clock.advance(5 * 60_000 - 1);
    await settled();
    expect(tables.nodes.get("n1")!.Status).toBe("ready");
    clock.advance(1);
    await settled();
    expect(tables.nodes.get("n1")!.Status).toBe("down");
    // An initializing node that stays silent goes down too; a down one is left alone.
    expect(tables.nodes.get("n2")!.Status).toBe("down");
    expect(tables.nodes.get("gone")!.ModifyIndex).toBeLessThan(tables.nodes.get("n1")!.ModifyIndex);
  });

  it("gives nodes the log already holds the failover TTL on a first leadership too (a restart, a replayed log)", async () => {
    const { clock, tables, settled, w } = await watcher({
      before: async (m) => {
        await m.write(registered("n1"), statusChange("n1", "initializing", "ready"));
      },
    });
    expect(w.tracked).toBe(1);
    // Far past a regular TTL + grace (20 s): heartbeats it could not receive count for nothing.
    clock.advance(5 * 60_000 - 1);
    await settled();
    expect(tables.nodes.get("n1")!.Status).toBe("ready");
    // A heartbeat brings the regular TTL back.
    expect(w.reset("n1")).toBe(10_000);
    clock.advance(20_001);
    await settled();
    expect(tables.nodes.get("n1")!.Status).toBe("down");
  });

  it("forgets purged nodes and every timer when it stops", async () => {
    const { w, clock, write } = await watcher();
    await write(registered("n1"), registered("n2"));
    w.reset("n1");
    w.reset("n2");
    await write({ type: "NodeDeregistered", v: 1, data: { NodeIDs: ["n1"] } });
    expect(w.tracked).toBe(1);
    await w.stop();
    expect(w.tracked).toBe(0);
    expect(clock.pending).toBe(0);
    expect(w.active).toBe(false);
    expect(w.reset("n2")).toBeUndefined();
  });

  it("keeps re-checking a disconnected node and writes down once its allocations can no longer reconnect", async () => {
    const { w, clock, tables, settled, write, log } = await watcher();
    await write(registered("n1"), statusChange("n1", "initializing", "ready"));
    await write(placed(alloc("a1", "n1", { Job: testJob({ maxClientDisconnectNs: HOUR_NS }) })));
    await write(clientUpdate("a1", "n1", "running"));
    w.reset("n1");
    clock.advance(20_001);
    await settled();
    expect(tables.nodes.get("n1")!.Status).toBe("disconnected");
    expect(w.tracked).toBe(1);
    const quiet = log.lastIndex();
    clock.advance(30 * 60_000);
    await settled();
    expect(log.lastIndex()).toBe(quiet);
    clock.advance(31 * 60_000);
    await settled();
    expect(tables.nodes.get("n1")!.Status).toBe("down");
    expect(tables.allocs.get("a1")!.ClientStatus).toBe("lost");
    expect(w.tracked).toBe(0);
  });
});

describe("missedHeartbeat", () => {
  const now = 1_763_800_000_000;
  const row = (id: string, fields: Partial<AllocRow>): AllocRow => ({
    ...alloc(id, "n1", { Job: testJob({ maxClientDisconnectNs: HOUR_NS }) }),
    CreateIndex: 1,
    ModifyIndex: 1,
    AllocModifyIndex: 1,
    ...fields,
  });

  it("disconnects a node with a running, desired-run allocation that tolerates it", () => {
    const allocs = [
      row("keep", { ClientStatus: "running" }),
      row("pending", { ClientStatus: "pending" }),
      row("strict", { ClientStatus: "running", Job: testJob() }),
      row("done", { ClientStatus: "complete" }),
    ];
    expect(missedHeartbeat({ Status: "ready" }, allocs, now)).toEqual({
      status: "disconnected",
      unknown: ["keep"],
      lost: ["pending", "strict"],
    });
  });

  it("sends a node down when only finished or expired allocations tolerate disconnects", () => {
    const expired = row("expired", {
      ClientStatus: "unknown",
      AllocStates: [{ Field: 0, Value: "unknown", Time: new Date(now - 2 * 3_600_000).toISOString() }],
    });
    const allocs = [row("done", { ClientStatus: "complete" }), expired];
    expect(missedHeartbeat({ Status: "disconnected" }, allocs, now)).toEqual({
      status: "down",
      unknown: [],
      lost: ["expired"],
    });
  });

  it("gives up expired unknown allocations while others keep the node disconnected", () => {
    const fresh = row("fresh", {
      ClientStatus: "unknown",
      AllocStates: [{ Field: 0, Value: "unknown", Time: new Date(now - 60_000).toISOString() }],
    });
    const old = row("old", {
      ClientStatus: "unknown",
      AllocStates: [{ Field: 0, Value: "unknown", Time: new Date(now - 3_600_000).toISOString() }],
    });
    expect(missedHeartbeat({ Status: "disconnected" }, [fresh, old], now)).toEqual({
      status: "disconnected",
      unknown: [],
      lost: ["old"],
    });
  });

  it("sends an initializing node down whatever runs on it", () => {
    expect(missedHeartbeat({ Status: "initializing" }, [row("a", { ClientStatus: "running" })], now)).toEqual(
      {
        status: "down",
        unknown: [],
        lost: ["a"],
      },
    );
  });
});
