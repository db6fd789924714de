import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createProjections } from "../../projections/index.ts";
import { mixedHistory } from "../../src/bench/mixed-history.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import type { EventLog } from "../../src/log/event-log.ts";
import { openFileLog } from "../../src/log/file/index.ts";
import { MemoryLog } from "../../src/log/memory-log.ts";
import type { Change, Projection } from "../../src/store/projection.ts";
import { SnapshotFile } from "../../src/store/snapshot-file.ts";
import { Store } from "../../src/store/store.ts";
import { allSchemas } from "../../streams/index.ts";
import { useTempDirs } from "./helpers.ts";

const logger = pino({ level: "silent" });
const codec = new EnvelopeCodec(allSchemas);

async function appendHistory(log: EventLog, from: number, to: number): Promise<void> {
  const all = [...mixedHistory(to, 42)].slice(from, to);
  for (let i = 0; i < all.length; i += 1000)
    await log.append(all.slice(i, i + 1000).map((e) => codec.encode(e)));
}

async function rebuild(
  log: EventLog,
  options: { snapshots?: SnapshotFile; projections?: Projection[] } = {},
) {
  const store = new Store({
    log,
    codec,
    projections: options.projections ?? createProjections().all,
    logger,
    snapshots: options.snapshots,
  });
  await store.start();
  return store;
}

describe("Store", () => {
  const tempDir = useTempDirs();

  it("rebuilds identical tables from the log twice and from snapshot + tail", async () => {
    const dir = await tempDir();
    const log = await openFileLog(join(dir, "log"), { fsync: "never" });
    await appendHistory(log, 0, 15_000);

    const first = await rebuild(log);
    const snapshots = new SnapshotFile(join(dir, "snap"), logger);
    const withSnapshot = await rebuild(log, { snapshots });
    await withSnapshot.snapshot();
    await withSnapshot.stop();
    await first.stop();

    await appendHistory(log, 15_000, 30_000);
    const a = await rebuild(log);
    const b = await rebuild(log);
    const fromSnapshot = await rebuild(log, { snapshots });
    expect(a.appliedIndex).toBe(30_000);
    expect(fromSnapshot.appliedIndex).toBe(30_000);
    expect(a.hash()).toBe(b.hash());
    expect(fromSnapshot.hash()).toBe(a.hash());
    expect(a.table("namespaces").size).toBeGreaterThan(10);
    for (const s of [a, b, fromSnapshot]) await s.stop();
    await log.close();
  });

  it("starts from a snapshot reading only the log after it: a damaged record before it does not stop start-up", async () => {
    const dir = await tempDir();
    const logDir = join(dir, "log");
    const log = await openFileLog(logDir, { fsync: "never", segmentBytes: 64 * 1024 });
    await appendHistory(log, 0, 15_000);
    const snapshots = new SnapshotFile(join(dir, "snap"), logger);
    const before = await rebuild(log, { snapshots });
    await before.snapshot();
    await before.stop();
    await appendHistory(log, 15_000, 20_000);
    const expected = await rebuild(log);
    const expectedHash = expected.hash();
    await expected.stop();
    await log.close();

    // Damage a record well before the snapshot, in a sealed segment.
    const segments = (await readdir(logDir)).filter((n) => n.endsWith(".seg")).sort();
    expect(Number(segments[2]!.slice(0, 20))).toBeLessThan(15_000);
    const damaged = join(logDir, segments[1]!);
    const bytes = await readFile(damaged);
    bytes[200] = bytes[200]! ^ 0x5a;
    await writeFile(damaged, bytes);

    const reads: { path: string; offset: number }[] = [];
    const reopened = await openFileLog(logDir, {
      fsync: "never",
      onSegmentRead: (path, offset) => reads.push({ path, offset }),
    });
    try {
      const restarted = await rebuild(reopened, { snapshots });
      expect(restarted.appliedIndex).toBe(20_000);
      expect(restarted.hash()).toBe(expectedHash);
      await restarted.stop();
      // Every segment read holds records after the snapshot.
      const holdsAfterSnapshot = (path: string) => {
        const i = segments.findIndex((n) => join(logDir, n) === path);
        return i === segments.length - 1 || Number(segments[i + 1]!.slice(0, 20)) > 15_001;
      };
      expect(reads.length).toBeGreaterThan(0);
      expect(reads.filter((r) => !holdsAfterSnapshot(r.path))).toEqual([]);
      // Without the snapshot, the replay reaches the damage and stops.
      await expect(rebuild(reopened)).rejects.toThrow(`${damaged} at byte offset`);
    } finally {
      await reopened.close();
    }
  });

  it("reports the outcome of each record, rejections included", async () => {
    const log = new MemoryLog();
    const store = await rebuild(log);
    const boot = [...mixedHistory(1)][0]!;
    expect((await store.write(boot)).status).toBe("applied");
    const again = await store.write({
      ...boot,
      data: { ClusterID: "other", CreateTime: 1, ServerName: "x" },
    });
    expect(again).toMatchObject({ status: "rejected", code: 409, reason: "cluster is already bootstrapped" });
    const missing = await store.write({ type: "NamespaceDeleted", v: 1, at: 1, data: { Name: "nope" } });
    expect(missing).toMatchObject({ status: "rejected", code: 404 });
    // The rejected bootstrap did not touch the default namespace created by the first.
    expect(store.table("namespaces").get("default")).toMatchObject({ CreateIndex: 1, ModifyIndex: 1 });
    expect(await store.waitFor(2)).toMatchObject({ status: "rejected" });
    expect(await store.waitFor(1)).toEqual({ index: 1, status: "applied" });
    await store.stop();
  });

  it("publishes every row change with before, after and index", async () => {
    const log = new MemoryLog();
    const store = await rebuild(log);
    const seen: Change[] = [];
    store.change$.subscribe((c) => seen.push(c));
    await store.write([...mixedHistory(1)][0]!);
    const ns = (Name: string, Description: string) => ({
      type: "NamespaceUpserted",
      v: 1,
      at: 2,
      data: { Namespace: { Name, Description, Quota: "", Meta: null, Capabilities: null } },
    });
    await store.write(ns("a", "one"));
    await store.write(ns("a", "two"));
    await store.write({ type: "NamespaceDeleted", v: 1, at: 3, data: { Name: "a" } });
    const forA = seen.filter((c) => c.key === "a");
    expect(
      forA.map((c) => [
        c.index,
        (c.before as { Description?: string })?.Description,
        (c.after as { Description?: string })?.Description,
      ]),
    ).toEqual([
      [2, undefined, "one"],
      [3, "one", "two"],
      [4, "two", undefined],
    ]);
    expect(store.tableIndex("namespaces")).toBe(4);
    await store.stop();
  });

  it("drops a projection's snapshot part when its version changes, and rebuilds what it is linked to", async () => {
    const dir = await tempDir();
    const log = await openFileLog(join(dir, "log"), { fsync: "never" });
    await appendHistory(log, 0, 5_000);
    const snapshots = new SnapshotFile(join(dir, "snap"), logger);
    const original = await rebuild(log, { snapshots });
    await original.snapshot();
    const expected = original.hash();
    await original.stop();

    const bumped = createProjections();
    const namespaces = bumped.all.find((p) => p.name === "namespaces")!;
    const evolved: string[] = [];
    const wrapped = bumped.all.map((p) =>
      p === namespaces || p.name === "cluster"
        ? {
            ...p,
            version: p === namespaces ? p.version + 1 : p.version,
            evolve: (ctx: Parameters<Projection["evolve"]>[0], e: Parameters<Projection["evolve"]>[1]) => {
              evolved.push(p.name);
              p.evolve(ctx, e);
            },
          }
        : p,
    );
    const store = await rebuild(log, { snapshots, projections: wrapped });
    expect(store.hash()).toBe(expected);
    // namespaces reads cluster: both replayed from the first record.
    expect(evolved.filter((n) => n === "cluster").length).toBeGreaterThan(0);
    expect(evolved.filter((n) => n === "namespaces").length).toBeGreaterThan(4_000);
    await store.stop();
    await log.close();
  });

  it("keeps the last snapshots and loads the newest at or before an index", async () => {
    const dir = await tempDir();
    const log = await openFileLog(join(dir, "log"), { fsync: "never" });
    const snapshots = new SnapshotFile(join(dir, "snap"), logger, 3);
    const store = await rebuild(log, { snapshots });
    for (let i = 0; i < 5; i++) {
      await appendHistory(log, i * 1000, (i + 1) * 1000);
      await store.caughtUp();
      await store.snapshot();
    }
    await store.stop();
    expect(await snapshots.indexes()).toEqual([5000, 4000, 3000]);
    expect((await snapshots.load(4500))?.index).toBe(4000);
    expect(await snapshots.load(2999)).toBeUndefined();
    await log.close();
  });

  it("ignores a damaged snapshot and replays the log instead", async () => {
    const dir = await tempDir();
    const log = await openFileLog(join(dir, "log"), { fsync: "never" });
    await appendHistory(log, 0, 2_000);
    const snapshots = new SnapshotFile(join(dir, "snap"), logger);
    const s = await rebuild(log, { snapshots });
    await s.snapshot();
    const expected = s.hash();
    await s.stop();
    const { readFile, writeFile } = await import("node:fs/promises");
    const path = snapshots.pathOf((await snapshots.indexes())[0]!);
    const bytes = await readFile(path);
    bytes[bytes.length >> 1]! ^= 0xff;
    await writeFile(path, bytes);
    const again = await rebuild(log, { snapshots });
    expect(again.hash()).toBe(expected);
    await again.stop();
    await log.close();
  });
});
