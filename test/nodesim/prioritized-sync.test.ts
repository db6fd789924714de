import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { Counters } from "../../src/nodesim/counters.ts";
import { DEFAULT_DRIVER, type DriverOptions } from "../../src/nodesim/driver-options.ts";
import { DEFAULT_SHAPE } from "../../src/nodesim/node-body.ts";
import { Prng } from "../../src/nodesim/prng.ts";
import { SimNode } from "../../src/nodesim/sim-node.ts";
import { SyncWheel } from "../../src/nodesim/sync-wheel.ts";
import type { TaskState } from "../../src/nodesim/task-states.ts";
import { TimerQueue } from "../../src/nodesim/timer-queue.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import { FakeRpc, type RecordedCall } from "./fake-rpc.ts";

const at = (ms: number) => ({ min: ms, max: ms });

/** One simulated node on a virtual clock, talking to a FakeRpc. */
async function nodeOnVirtualClock(prioritized: boolean, driver: Partial<DriverOptions>) {
  const clock = new VirtualClock();
  const rpc = new FakeRpc(clock);
  const timers = new TimerQueue(clock);
  const wheel = new SyncWheel(timers);
  const node = new SimNode(
    {
      rpc,
      timers,
      wheel,
      counters: new Counters(),
      logger: pino({ level: "silent" }),
      seed: "test",
      driver: { ...DEFAULT_DRIVER, failureRate: 0, ...driver },
      shape: DEFAULT_SHAPE,
      prioritized,
      maxQueryTimeNs: 300e9,
      initialHeartbeatStaggerMs: 100,
    },
    0,
    new Prng("node"),
  );
  wheel.start();
  await node.start();
  /** Moves virtual time in 5 ms steps, letting the node's promises settle at each. */
  const run = async (ms: number) => {
    for (let t = 0; t < ms; t += 5) {
      clock.advance(5);
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    }
  };
  const place = (id: string, fields: Record<string, unknown> = {}) =>
    rpc.put({
      ID: id,
      JobID: "web",
      TaskGroup: "web",
      DesiredStatus: "run",
      ClientStatus: "pending",
      Job: { ID: "web", Type: "service", TaskGroups: [{ Name: "web", Tasks: [{ Name: "app" }] }] },
      ...fields,
    });
  return { clock, rpc, node, run, place };
}

type SentAlloc = { ID: string; ClientStatus: string; TaskStates: Record<string, TaskState> };
const sent = (c: RecordedCall) => c.body.Alloc as SentAlloc[];
const eventTime = (a: SentAlloc, type: string) =>
  (a.TaskStates.app!.Events.find((e) => e.Type === type)?.Time ?? 0) / 1e6;

describe("prioritized client allocation updates, on a virtual clock", () => {
  it("sends a ClientStatus change at the next tick, and typical updates only on every 5th", async () => {
    const { rpc, run, place } = await nodeOnVirtualClock(true, {
      setup: at(20),
      pull: at(100),
      start: at(1_500),
      eventInterval: 0,
    });
    place("a1");
    await run(3_000);
    const updates = rpc.updates();
    // Received, Task Setup and the driver event are typical: they went out together on a 5th tick,
    // then Started (pending → running) went out on the first tick after it.
    expect(updates.map((c) => sent(c).map((a) => a.ClientStatus))).toEqual([["pending"], ["running"]]);
    const [early, running] = updates.map((c) => sent(c)[0]!);
    expect(early!.TaskStates.app!.Events.map((e) => e.Type)).toEqual(["Received", "Task Setup", "Driver"]);
    const startedAt = eventTime(running!, "Started");
    expect(updates[1]!.at - startedAt).toBeGreaterThan(0);
    expect(updates[1]!.at - startedAt).toBeLessThanOrEqual(200);
    // The typical batch waited for a 5th tick: a multiple of 1 s after the wheel started (+ the node's slot).
    expect(updates[0]!.at - eventTime(early!, "Received")).toBeGreaterThan(200);
  });

  it("sends low-priority updates at most every 5th tick, carrying only the latest state of each allocation", async () => {
    const { rpc, run, place } = await nodeOnVirtualClock(true, {
      setup: at(10),
      pull: at(10),
      start: at(10),
      eventInterval: 100,
      eventGap: at(30),
    });
    place("a1");
    place("a2");
    await run(1_000);
    const from = rpc.updates().length;
    await run(10_000);
    const steady = rpc.updates().slice(from);
    // ~20 periodic events per allocation per second, but one send a second.
    expect(steady.length).toBeGreaterThanOrEqual(9);
    expect(steady.length).toBeLessThanOrEqual(11);
    for (let i = 1; i < steady.length; i++)
      expect(steady[i]!.at - steady[i - 1]!.at).toBeGreaterThanOrEqual(1_000);
    for (const c of steady) {
      const ids = sent(c).map((a) => a.ID);
      expect(new Set(ids).size).toBe(ids.length);
    }
  });

  it("with the switch off, sends on every tick with something waiting (Nomad before PR 17354)", async () => {
    const { rpc, run, place } = await nodeOnVirtualClock(false, {
      setup: at(20),
      pull: at(100),
      start: at(1_500),
      eventInterval: 100,
      eventGap: at(30),
    });
    place("a1");
    await run(1_000);
    // Received + Task Setup on the first tick, the driver event on a later one, before the task started.
    const early = rpc.updates();
    expect(early.length).toBeGreaterThanOrEqual(2);
    expect(early.every((c) => sent(c)[0]!.ClientStatus === "pending")).toBe(true);
    await run(1_000);
    const runningSend = rpc.updates().find((c) => sent(c)[0]!.ClientStatus === "running")!;
    expect(runningSend.at - eventTime(sent(runningSend)[0]!, "Started")).toBeLessThanOrEqual(200);
    const from = rpc.updates().length;
    await run(5_000);
    const steady = rpc.updates().slice(from);
    // A periodic event every ~100 ms: about one send per 200 ms tick.
    expect(steady.length).toBeGreaterThanOrEqual(20);
    for (let i = 1; i < steady.length; i++)
      expect(steady[i]!.at - steady[i - 1]!.at).toBeGreaterThanOrEqual(200);
  });

  it("stops an allocation the server marks for stop, reporting complete", async () => {
    const { rpc, run, place } = await nodeOnVirtualClock(true, {
      setup: at(10),
      pull: at(10),
      start: at(10),
      kill: at(100),
      eventInterval: 0,
    });
    place("a1");
    await run(1_500);
    place("a1", { DesiredStatus: "stop" });
    await run(1_500);
    const last = sent(rpc.updates().at(-1)!)[0]!;
    expect(last.ClientStatus).toBe("complete");
    expect(last.TaskStates.app!.Events.map((e) => e.Type).slice(-3)).toEqual([
      "Killing",
      "Terminated",
      "Killed",
    ]);
    expect(last.TaskStates.app!.State).toBe("dead");
  });

  it("reports complete an allocation the server stopped before the node first pulled it, its tasks never started", async () => {
    const { rpc, run, place } = await nodeOnVirtualClock(true, {
      setup: at(10),
      pull: at(10),
      start: at(10),
      eventInterval: 0,
    });
    place("a1", { DesiredStatus: "stop" });
    await run(1_500);
    const reported = rpc.updates().flatMap(sent);
    expect(reported.map((a) => a.ID)).toEqual(["a1"]);
    const [a1] = reported;
    expect(a1!.ClientStatus).toBe("complete");
    expect(a1!.TaskStates.app).toMatchObject({
      State: "dead",
      Failed: false,
      StartedAt: "0001-01-01T00:00:00Z",
    });
    expect(a1!.TaskStates.app!.FinishedAt).not.toBe("0001-01-01T00:00:00Z");
    expect(a1!.TaskStates.app!.Events.map((e) => e.Type)).toEqual(["Received"]);
    // A later version changes nothing: it never runs.
    place("a1", { DesiredStatus: "stop", DesiredDescription: "again" });
    await run(1_500);
    expect(rpc.updates().flatMap(sent)).toHaveLength(1);
  });
});

describe("prioritized updates on vs off, same workload on a virtual clock", () => {
  it("sends fewer allocation entries and calls with prioritized updates", async () => {
    const driver = {
      setup: { min: 10, max: 40 },
      pull: { min: 100, max: 600 },
      start: { min: 300, max: 1_500 },
      eventInterval: 2_000,
      eventGap: { min: 100, max: 400 },
    };
    const sent = { on: { calls: 0, entries: 0 }, off: { calls: 0, entries: 0 } };
    for (const mode of ["on", "off"] as const) {
      const { rpc, run, place } = await nodeOnVirtualClock(mode === "on", driver);
      for (let i = 0; i < 10; i++) place(`a${i}`);
      await run(30_000);
      const updates = rpc.updates();
      sent[mode] = { calls: updates.length, entries: updates.reduce((n, c) => n + allocsOf(c).length, 0) };
    }
    // The same allocations ran through the same lifecycle in both modes.
    expect(sent.on.entries).toBeLessThan(sent.off.entries * 0.8);
    expect(sent.on.calls).toBeLessThan(sent.off.calls * 0.5);
  });
});

const allocsOf = (c: RecordedCall) => c.body.Alloc as unknown[];
