import { readFileSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { HistoryEntry, HistoryRow } from "../../projections/history.ts";
import { pageOfEntries } from "../../src/api/history-pages.ts";
import type { EventLog } from "../../src/log/event-log.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import { replayStore } from "../replay-store.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { playWholeStory, Scenario } from "../services/scheduler/scenario.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * Every object's entries as the projection computed them before the
 * history store: the entries of each change, concatenated in log order
 * (what the row's `Entries` held). Computed by a fresh replay of the log.
 */
async function entriesAsBefore(log: EventLog): Promise<Map<string, HistoryEntry[]>> {
  const store = replayStore(log);
  const all = new Map<string, HistoryEntry[]>();
  store.change$.subscribe((c) => {
    if (c.table !== "history" || c.after === undefined) return;
    const row = c.after as HistoryRow;
    all.set(row.Key, (all.get(row.Key) ?? []).concat(row.Latest));
  });
  await store.start();
  await store.caughtUp();
  await store.stop();
  return all;
}

/** A logger whose warnings the test reads. */
function recordingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: "info" }, { write: (s: string) => lines.push(JSON.parse(s)) });
  return { logger, warnings: () => lines.filter((l) => l.level === 40).map((l) => l.msg) };
}

/** The whole story, played once, on a server that is then closed with its data dir kept. */
async function storyOnDisk(): Promise<{
  dataDir: string;
  expected: Map<string, HistoryEntry[]>;
  last: number;
}> {
  const s = await Scenario.start();
  await playWholeStory(s);
  const expected = await entriesAsBefore(s.server.log);
  const last = s.server.log.lastIndex();
  // The story's server, as it answers before any restart.
  for (const [key, entries] of expected) expect(s.server.history.entries(key)).toEqual(entries);
  await s.server.close();
  cleanups.push(() => rm(s.server.dataDir, { recursive: true, force: true }));
  return { dataDir: s.server.dataDir, expected, last };
}

async function restart(
  dataDir: string,
  logger = pino({ level: "silent" }),
  options: { clock?: VirtualClock; args?: string[] } = {},
): Promise<TestServer> {
  // Virtual time that does not move: no timer of the restarted leader adds records.
  const clock = options.clock ?? new VirtualClock();
  const server = await startTestServer({ dataDir, args: options.args, deps: { clock, logger } });
  cleanups.push(() => server.close().then(() => undefined));
  return server;
}

function expectSameHistory(server: TestServer, expected: Map<string, HistoryEntry[]>, last: number) {
  expect(expected.size).toBeGreaterThan(20);
  for (const [key, entries] of expected) {
    expect(server.history.entries(key, last), key).toEqual(entries);
  }
}

describe("history store", () => {
  it("answers every object's history as the in-heap projection did, after restarts with and without a snapshot", async () => {
    const { dataDir, expected, last } = await storyOnDisk();
    const objects = new Set([...expected.keys()].map((k) => k.split("\u0000")[0]));
    expect([...objects].sort()).toEqual(
      expect.arrayContaining(["allocation", "deployment", "evaluation", "job", "node"]),
    );

    const withSnapshot = await restart(dataDir);
    expectSameHistory(withSnapshot, expected, last);
    // Served by the API the same, paged and in reverse, and as of a past index.
    const alloc = [...expected.keys()].find((k) => k.startsWith("allocation\u0000"))!;
    const id = alloc.split("\u0000")[1]!;
    const ns = withSnapshot.store.table<HistoryRow>("history").get(alloc)!.Namespace;
    const whole = (await (
      await withSnapshot.call(`/v1/allocation/${id}/history?namespace=${ns}`)
    ).json()) as HistoryEntry[];
    expect(whole).toEqual(JSON.parse(JSON.stringify(expected.get(alloc))));
    const reversed = await withSnapshot.call(
      `/v1/allocation/${id}/history?namespace=${ns}&reverse=true&per_page=2`,
    );
    expect(await reversed.json()).toEqual(whole.slice(-2).reverse());
    const past = whole[1]!.Index;
    const then = await withSnapshot.call(`/v1/allocation/${id}/history?namespace=${ns}&at_index=${past}`);
    expect(then.status).toBe(200);
    expect(await then.json()).toEqual(whole.filter((e) => e.Index <= past));
    // The newest page read from the newest chunks alone is the page of the whole history, token included.
    for (const [key, entries] of expected) {
      for (const perPage of [1, 2, 5]) {
        const list = { perPage, nextToken: "", reverse: true, filter: undefined };
        const fromNewest = await pageOfEntries(withSnapshot.history.newest(key, perPage + 1, last), list);
        expect(fromNewest, key).toEqual(await pageOfEntries(entries, list));
      }
    }
    await withSnapshot.close();

    await rm(join(dataDir, "snapshots"), { recursive: true, force: true });
    const withoutSnapshot = await restart(dataDir);
    expectSameHistory(withoutSnapshot, expected, last);
    await withoutSnapshot.close();
  });

  it("rebuilds a deleted, damaged or older-format history file from the log, with a warning, and answers the same", async () => {
    const { dataDir, expected, last } = await storyOnDisk();
    const historyDir = join(dataDir, "history");

    await rm(historyDir, { recursive: true, force: true });
    const deleted = recordingLogger();
    const afterDelete = await restart(dataDir, deleted.logger);
    expect(deleted.warnings()).toContain(
      "history file behind the snapshot: rebuilding the history projection from the log",
    );
    expectSameHistory(afterDelete, expected, last);
    await afterDelete.close();

    // A flipped byte early in the file, and no index to skip over it.
    const path = join(historyDir, "history.log");
    const bytes = readFileSync(path);
    bytes[64] = bytes[64]! ^ 0xff;
    writeFileSync(path, bytes);
    await rm(join(historyDir, "history.idx"));
    const damaged = recordingLogger();
    const afterDamage = await restart(dataDir, damaged.logger);
    expect(damaged.warnings()).toContain("history file damaged: rebuilding it from the log");
    expectSameHistory(afterDamage, expected, last);
    await afterDamage.close();

    // A file of the format before (2): rebuilt from the log rather than read.
    const current = readFileSync(path);
    current.writeUInt32LE(2, 8);
    writeFileSync(path, current);
    const older = recordingLogger();
    const afterOlder = await restart(dataDir, older.logger);
    expect(older.warnings()).toContain(
      "history file is not one this version writes: rebuilding it from the log",
    );
    expect(older.warnings()).toContain(
      "history file behind the snapshot: rebuilding the history projection from the log",
    );
    expectSameHistory(afterOlder, expected, last);
    await afterOlder.close();
  });

  it("drops entries older than history_retention from the store at start, and a rebuild brings them back", async () => {
    const { dataDir, expected, last } = await storyOnDisk();
    const times = [...expected.values()]
      .flat()
      .map((e) => e.Time)
      .sort();
    const cutoff = times[Math.floor(times.length / 2)]!;
    expect(times.filter((t) => t < cutoff).length).toBeGreaterThan(10);
    const clock = new VirtualClock(Date.parse(cutoff) + 3_600_000);
    const retained = await restart(dataDir, pino({ level: "silent" }), {
      clock,
      args: ["--history-retention", "1h"],
    });
    for (const [key, entries] of expected) {
      expect(retained.history.entries(key, last), key).toEqual(entries.filter((e) => e.Time >= cutoff));
    }
    await retained.close();
    // The log still holds everything: the store rebuilt from it answers as before.
    await rm(join(dataDir, "history"), { recursive: true, force: true });
    const rebuilt = await restart(dataDir);
    expectSameHistory(rebuilt, expected, last);
    await rebuilt.close();
  });
});
