import { setImmediate as nextTurn } from "node:timers/promises";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { ServerConfig } from "../../src/config.ts";
import type { ServiceContext } from "../../src/services/service.ts";
import { VolumeWatcher } from "../../src/services/volume-watcher.ts";
import { type Draft, writeEvents } from "../../src/store/writer.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import { CSI_CLAIM_STATE_UNPUBLISHING, CSI_CLAIM_WRITE } from "../../streams/csi.ts";
import { claimsUpdated, volumeClaim, volumeSpec, volumesRegistered } from "../projections/csi-fixtures.ts";
import { AT, memoryStore } from "../projections/memory-store.ts";

const VOLUMES = 300;
const ids = Array.from({ length: VOLUMES }, (_, i) => `vol-${String(i).padStart(3, "0")}`);

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** A past claim of volume `id` to free: a claim received as unpublishing. */
const pastClaim = (id: string) =>
  claimsUpdated(id, volumeClaim(`alloc-${id}`, "n1", CSI_CLAIM_WRITE, CSI_CLAIM_STATE_UNPUBLISHING));

/**
 * A store holding 300 volumes, each with a past claim to free unless
 * `idle`, and a leader's watcher over it.
 */
async function setUp(idle = false) {
  const m = await memoryStore();
  const clock = new VirtualClock(AT);
  const write = (drafts: readonly Draft[]) =>
    writeEvents(m.store, clock.now(), { kind: "server", id: "s1" }, drafts);
  const { outcomes } = await write([
    // The bootstrap creates the default namespace.
    { type: "ClusterBootstrapped", v: 1, data: { ClusterID: "c1", CreateTime: AT, ServerName: "s1" } },
    volumesRegistered(...ids.map((id) => volumeSpec(id))),
    ...(idle ? [] : ids.map(pastClaim)),
  ]);
  expect(outcomes.every((o) => o.status === "applied")).toBe(true);
  const ctx: ServiceContext = {
    config: {} as ServerConfig,
    store: m.store,
    tables: m.tables,
    clock,
    logger: pino({ level: "silent" }),
    failover: true,
    write,
  };
  /** A watcher whose slices end after every volume: the most its walks can be cut. */
  const start = () => {
    const watcher = new VolumeWatcher({ sliceMs: 0 });
    watcher.start(ctx);
    cleanup.push(() => watcher.stop());
    return watcher;
  };
  return { ...m, write, start, ctx };
}

describe("volume watcher: walks in slices", () => {
  it("reaps every volume at start over many turns of the event loop, not in one step", async () => {
    const t = await setUp();
    const watcher = t.start();
    // start() returned with the reap under way: the loop's next turn comes before it ends.
    expect(watcher.watching).toBeLessThan(VOLUMES);
    await nextTurn();
    expect(watcher.watching).toBeLessThan(VOLUMES);
    await expect.poll(() => watcher.watching, { timeout: 30_000 }).toBe(VOLUMES);
    expect(watcher.counters.passes).toBeGreaterThanOrEqual(VOLUMES);
  });

  it("looks at the volumes a write changed over many turns, and takes what changes meanwhile in the same walk", async () => {
    const t = await setUp(true);
    const watcher = t.start();
    const first = await t.write(ids.slice(0, 150).map(pastClaim));
    expect(first.outcomes.every((o) => o.status === "applied")).toBe(true);
    // Answered while the watcher is still looking at that write's volumes.
    expect(watcher.watching).toBeLessThan(150);
    const rest = await t.write(ids.slice(150).map(pastClaim));
    expect(rest.outcomes.every((o) => o.status === "applied")).toBe(true);
    await expect.poll(() => watcher.watching, { timeout: 30_000 }).toBe(VOLUMES);
    expect(watcher.counters.passes).toBeGreaterThanOrEqual(VOLUMES);
  });

  it("stops walking when its leadership ends", async () => {
    const t = await setUp();
    const watcher = new VolumeWatcher({ sliceMs: 0 });
    watcher.start(t.ctx);
    await nextTurn();
    await watcher.stop();
    const passes = watcher.counters.passes;
    expect(passes).toBeLessThan(VOLUMES);
    for (let i = 0; i < 20; i++) await nextTurn();
    expect(watcher.counters.passes).toBe(passes);
    expect(watcher.watching).toBe(0);
  });
});
