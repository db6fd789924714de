import { join } from "node:path";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createProjections } from "../../projections/index.ts";
import { currentLeadership } from "../../projections/leadership.ts";
import { claimLeadership } from "../../src/cluster/leadership-claim.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import type { EventLog } from "../../src/log/event-log.ts";
import { MemoryLog } from "../../src/log/memory-log.ts";
import type { Projection } from "../../src/store/projection.ts";
import { SnapshotFile } from "../../src/store/snapshot-file.ts";
import { Store } from "../../src/store/store.ts";
import { writeEvents } from "../../src/store/writer.ts";
import type { Actor } from "../../streams/event-schema.ts";
import { allSchemas } from "../../streams/index.ts";
import { useTempDirs } from "../store/helpers.ts";

const logger = pino({ level: "silent" });
const codec = new EnvelopeCodec(allSchemas);

/** One server's view: its own projections and store over the shared log. */
async function server(log: EventLog, options: { snapshots?: SnapshotFile; projections?: Projection[] } = {}) {
  const projections = createProjections();
  const store = new Store({
    log,
    codec,
    projections: options.projections ?? projections.all,
    logger,
    snapshots: options.snapshots,
  });
  await store.start();
  return { store, tables: projections.tables };
}

const namespace = (Name: string) => ({
  type: "NamespaceUpserted",
  v: 1,
  data: { Namespace: { Name, Description: "", Quota: "", Meta: null, Capabilities: null } },
});
const as = (id: string, epoch?: number): Actor => ({ kind: "server", id, epoch });

describe("leadership epochs in the log", () => {
  const tempDir = useTempDirs();

  it("refuses, on every server, the late writes of a deposed leader", async () => {
    const log = new MemoryLog();
    const a = await server(log);
    const b = await server(log);
    const claim = (s: typeof a, name: string) =>
      claimLeadership({
        store: s.store,
        leadership: s.tables.leadership,
        now: 1,
        actor: as(name),
        serverName: name,
        address: `${name}:4646`,
      });

    expect(await claim(a, "a")).toMatchObject({ status: "established", epoch: 1 });
    const before = await writeEvents(a.store, 2, as("a", 1), [namespace("under-1")]);
    expect(before.outcomes[0]).toMatchObject({ status: "applied" });

    await b.store.caughtUp();
    expect(await claim(b, "b")).toMatchObject({ status: "established", epoch: 2 });
    await a.store.caughtUp();

    const late = await writeEvents(a.store, 3, as("a", 1), [namespace("late")]);
    expect(late.outcomes[0]).toMatchObject({
      status: "rejected",
      code: 409,
      reason: expect.stringMatching(/epoch 1, superseded by epoch 2 \(b\)/),
    });
    const current = await writeEvents(b.store, 4, as("b", 2), [namespace("under-2")]);
    expect(current.outcomes[0]).toMatchObject({ status: "applied" });
    const forged = await writeEvents(b.store, 5, as("b", 9), [namespace("forged")]);
    expect(forged.outcomes[0]).toMatchObject({ status: "rejected", code: 409 });
    // Writes that carry no epoch (API callers, bootstrap) are not fenced.
    const plain = await writeEvents(a.store, 6, as("a"), [namespace("plain")]);
    expect(plain.outcomes[0]).toMatchObject({ status: "applied" });

    await a.store.caughtUp();
    await b.store.caughtUp();
    for (const s of [a, b]) {
      expect([...s.tables.namespaces.all()].map((n) => n.Name)).toEqual(["plain", "under-1", "under-2"]);
      expect(await s.store.waitFor(late.index)).toMatchObject({ status: "rejected" });
    }
    expect(a.store.hash()).toBe(b.store.hash());
    const replayed = await server(log);
    expect(replayed.store.hash()).toBe(a.store.hash());
    expect(await replayed.store.waitFor(late.index)).toMatchObject({ status: "rejected" });
    for (const s of [a, b, replayed]) await s.store.stop();
  });

  it("orders racing claims by the log: the first to an epoch wins it, the other is refused", async () => {
    const log = new MemoryLog();
    const a = await server(log);
    const b = await server(log);
    // Both saw no epoch yet and claim epoch 1.
    const claims = await Promise.all(
      [a, b].map(async (s, i) => {
        const data = { ServerName: `s${i}`, Address: `s${i}:4646`, Epoch: 1 };
        const { outcomes } = await writeEvents(s.store, 1, as(`s${i}`), [
          { type: "LeadershipEstablished", v: 1, data },
        ]);
        return { status: outcomes[0]!.status === "applied" ? "established" : "lost" };
      }),
    );
    expect(claims.map((c) => c.status).sort()).toEqual(["established", "lost"]);
    const winner = claims.findIndex((c) => c.status === "established");
    for (const s of [a, b]) {
      await s.store.caughtUp();
      expect(currentLeadership(s.tables.leadership)).toMatchObject({ Epoch: 1, ServerName: `s${winner}` });
    }
    for (const s of [a, b]) await s.store.stop();
  });

  it("fences as of each record when a projection is rebuilt from the log under a newer leadership table", async () => {
    const dir = await tempDir();
    const log = new MemoryLog();
    const snapshots = new SnapshotFile(join(dir, "snap"), logger);
    const first = await server(log, { snapshots });
    const claim = (name: string) =>
      claimLeadership({
        store: first.store,
        leadership: first.tables.leadership,
        now: 1,
        actor: as(name),
        serverName: name,
        address: `${name}:4646`,
      });
    await claim("a");
    await writeEvents(first.store, 2, as("a", 1), [namespace("kept")]);
    await claim("b");
    await writeEvents(first.store, 3, as("a", 1), [namespace("refused")]);
    await first.store.snapshot();
    const expected = first.store.hash();
    await first.store.stop();

    // namespaces changes version: rebuilt from record 1 while the leadership
    // table comes from the snapshot, already at epoch 2.
    const bumped = createProjections();
    const projections = bumped.all.map((p) =>
      p.name === "namespaces" ? { ...p, version: p.version + 1 } : p,
    );
    const again = await server(log, { snapshots, projections });
    expect([...bumped.tables.namespaces.all()].map((n) => n.Name)).toEqual(["kept"]);
    expect(again.store.hash()).toBe(expected);
    await again.store.stop();
  });
});
