import { Observable } from "rxjs";
import { describe, expect, it } from "vitest";
import { csiDetachKey, pendingFor } from "../../projections/csi-detach-requests.ts";
import { historyKey } from "../../projections/history.ts";
import { DetachCalls, DetachFailed, type DetachTarget } from "../../src/csi/detach-calls.ts";
import { DetachDeadlines } from "../../src/csi/detach-deadlines.ts";
import type { Change } from "../../src/store/projection.ts";
import type { Draft } from "../../src/store/writer.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import { volumeSpec, volumesDeregistered, volumesRegistered } from "../projections/csi-fixtures.ts";
import { AT, memoryStore } from "../projections/memory-store.ts";
import { replayStore } from "../replay-store.ts";

const target: DetachTarget = {
  Namespace: "default",
  VolumeID: "vol1",
  ExternalID: "ext-vol1",
  PluginID: "ebs",
  NodeID: "n1",
  Kind: "node",
  Claim: {
    AllocationID: "a1",
    NodeID: "n1",
    ExternalNodeID: "ext-n1",
    Mode: 1,
    AccessMode: "single-node-writer",
    AttachmentMode: "file-system",
    State: 4,
  },
};

const ack = (RequestID: string, NodeID = "n1", error = ""): Draft => ({
  type: "CSIDetachAcknowledged",
  v: 1,
  data: { Namespace: "default", VolumeID: "vol1", RequestID, NodeID, Error: error },
});

/** A store holding volume vol1, a virtual clock, and the detach calls and deadlines of a leader over them. */
async function setup(policy = { timeoutMs: 30_000, attempts: 3, backoffMs: 1_000 }) {
  const m = await memoryStore();
  const ready = await m.write(
    // The bootstrap creates the default namespace.
    { type: "ClusterBootstrapped", v: 1, data: { ClusterID: "c1", CreateTime: AT, ServerName: "s1" } },
    volumesRegistered(volumeSpec("vol1")),
  );
  expect(ready.map((o) => o.status)).toEqual(["applied", "applied"]);
  const clock = new VirtualClock();
  let n = 0;
  const write = async (drafts: readonly Draft[]) => {
    const outcomes = await m.write(...drafts);
    for (const o of outcomes) if (o.status === "rejected") throw new Error(`${o.code} ${o.reason}`);
    return outcomes.at(-1)!.index;
  };
  const calls = new DetachCalls({ change$: m.store.change$, clock, write, policy, newID: () => `r${++n}` });
  const deadlines = new DetachDeadlines({
    change$: m.store.change$,
    detaches: m.tables.csiDetachRequests,
    clock,
    write,
  });
  deadlines.start();
  const pending = () => pendingFor(m.tables.csiDetachRequests, "n1");
  /** Resolves once node n1 has `count` pending requests. */
  const waitPending = async (count: number) => {
    await expect.poll(() => pending().length).toBe(count);
    return pending();
  };
  const row = () => m.tables.csiDetachRequests.get(csiDetachKey("default", "vol1"));
  return { ...m, clock, calls, deadlines, pending, waitPending, row, write };
}

describe("server → client detach calls", () => {
  it("resolves when the node acknowledges, and the exchange is in the volume's history", async () => {
    const t = await setup();
    const done = t.calls.call(target);
    const [request] = await t.waitPending(1);
    expect(request).toMatchObject({
      RequestID: "r1",
      Kind: "node",
      Attempt: 1,
      NodeID: "n1",
      Deadline: t.clock.now() + 30_000,
    });
    expect(t.deadlines.armed).toBe(1);
    await t.write([ack("r1")]);
    await done;
    expect(t.pending()).toEqual([]);
    expect(t.deadlines.armed).toBe(0);
    expect(t.row()?.Detach).toMatchObject({ RequestID: "r1", Outcome: "acknowledged", Error: "" });
    const entries = await t.history.entriesInSlices(historyKey("csi_volume", "vol1"));
    const steps = entries.map((e) =>
      e.Field === "Detach" ? (e.To as { Outcome: string }).Outcome : e.Field,
    );
    // The volume's creation, then its detach calls'.
    expect(steps).toEqual(["(created)", "(created)", "acknowledged"]);
    expect(entries.at(-1)!.Cause.Event).toBe("CSIDetachAcknowledged");
  });

  it("times a silent node out at the deadline and asks again after the backoff", async () => {
    const t = await setup();
    const done = t.calls.call(target);
    await t.waitPending(1);
    t.clock.advance(30_000);
    // The timeout, then the backoff timer; the second attempt has its own ID.
    await expect.poll(() => t.row()?.Detach.Outcome).toBe("timed-out");
    expect(t.pending()).toEqual([]);
    await expect.poll(() => t.clock.pending).toBe(1);
    t.clock.advance(1_000);
    const [retry] = await t.waitPending(1);
    expect(retry).toMatchObject({ RequestID: "r2", Attempt: 2 });
    await t.write([ack("r2")]);
    await done;
  });

  it("gives up after the last attempt with the plugin's error", async () => {
    const t = await setup({ timeoutMs: 10_000, attempts: 2, backoffMs: 500 });
    const done = t.calls.call(target);
    done.catch(() => undefined);
    await t.waitPending(1);
    await t.write([ack("r1", "n1", "rpc error: device busy")]);
    await expect.poll(() => t.clock.pending).toBe(1);
    t.clock.advance(500);
    await t.waitPending(1);
    await t.write([ack("r2", "n1", "rpc error: still busy")]);
    await expect(done).rejects.toThrow(DetachFailed);
    await expect(done).rejects.toThrow(
      /node detach of volume "vol1" on node n1 failed after 2 attempts: rpc error: still busy/,
    );
  });

  it("refuses an ack from another node, and a late ack after the timeout", async () => {
    const t = await setup({ timeoutMs: 10_000, attempts: 1, backoffMs: 500 });
    const done = t.calls.call(target);
    done.catch(() => undefined);
    await t.waitPending(1);
    await expect(t.write([ack("r1", "n2")])).rejects.toThrow("403 detach request r1 is for node n1, not n2");
    t.clock.advance(10_000);
    await expect(done).rejects.toThrow(/no answer before the deadline/);
    await expect(t.write([ack("r1")])).rejects.toThrow("404 detach request r1 is not pending");
  });

  it("a new leader times out the calls a previous one left pending", async () => {
    const t = await setup();
    const done = t.calls.call(target);
    done.catch(() => undefined);
    await t.waitPending(1);
    // The old leader stops: its waits end, the request stays pending.
    t.calls.stop();
    t.deadlines.stop();
    await expect(done).rejects.toThrow(/no longer leads/);
    expect(t.pending()).toHaveLength(1);
    const next = new DetachDeadlines({
      change$: t.store.change$,
      detaches: t.tables.csiDetachRequests,
      clock: t.clock,
      write: t.write,
    });
    next.start();
    expect(next.armed).toBe(1);
    t.clock.advance(30_000);
    await expect.poll(() => t.row()?.Detach.Outcome).toBe("timed-out");
    expect(next.armed).toBe(0);
    next.stop();
  });

  it("a volume deregistered during a detach call takes its row along in the same record: the wait ends, nothing can recreate it", async () => {
    const t = await setup();
    const done = t.calls.call(target);
    done.catch(() => undefined);
    await t.waitPending(1);
    expect(t.deadlines.armed).toBe(1);
    await t.write([volumesDeregistered(["vol1"])]);
    expect(t.row()).toBeUndefined();
    expect(t.pending()).toEqual([]);
    expect(t.deadlines.armed).toBe(0);
    await expect(done).rejects.toThrow(DetachFailed);
    await expect(done).rejects.toThrow('volume "vol1" was deregistered');
    // The node's late answer finds nothing; a new call for the volume is refused, and no row comes back.
    await expect(t.write([ack("r1")])).rejects.toThrow("404 detach request r1 is not pending");
    await expect(t.calls.call(target)).rejects.toThrow("404 volume not found: vol1");
    expect(t.row()).toBeUndefined();
    // The volume's history ends with its one deletion.
    const entries = await t.history.entriesInSlices(historyKey("csi_volume", "vol1"));
    expect(entries.map((e) => e.Field)).toEqual(["(created)", "(created)", "(deleted)"]);
    expect(entries.at(-1)!.Cause.Event).toBe("CSIVolumesDeregistered");

    // Replay gives the same tables.
    const fresh = replayStore(t.log);
    await fresh.start();
    await fresh.caughtUp();
    expect(fresh.appliedIndex).toBe(t.store.appliedIndex);
    expect(fresh.table("csi_detach_requests").size).toBe(0);
    expect(fresh.hash()).toBe(t.store.hash());
    await fresh.stop();
    t.deadlines.stop();
  });
  it("every call in flight waits through one subscription to the changes; a refused request leaves no wait behind", async () => {
    const t = await setup();
    let subscribed = 0;
    const counted = new Observable<Change>((subscriber) => {
      subscribed++;
      const inner = t.store.change$.subscribe(subscriber);
      return () => {
        subscribed--;
        inner.unsubscribe();
      };
    });
    let n = 0;
    const calls = new DetachCalls({
      change$: counted,
      clock: t.clock,
      write: t.write,
      policy: { timeoutMs: 30_000, attempts: 1, backoffMs: 1_000 },
      newID: () => `c${++n}`,
    });
    const missing = await Promise.allSettled(
      ["m1", "m2", "m3"].map((VolumeID) => calls.call({ ...target, VolumeID })),
    );
    expect(missing.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    const done = calls.call(target);
    await t.waitPending(1);
    expect(subscribed).toBe(1);
    await t.write([ack("c4")]);
    await done;
    const stopped = calls.call(target);
    await t.waitPending(1);
    calls.stop();
    await expect(stopped).rejects.toThrow("this server no longer leads");
    expect(subscribed).toBe(0);
    t.deadlines.stop();
  });
});
