import { readdir } from "node:fs/promises";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createRootKey, rootKeyCreatedDraft } from "../../src/keyring/create-root-key.ts";
import { randomKek } from "../../src/keyring/key-wrap.ts";
import { Keyring } from "../../src/keyring/keyring.ts";
import { Keystore, KeystoreError } from "../../src/keyring/keystore.ts";
import { RootKeyMaterialSync } from "../../src/keyring/root-key-material-sync.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import type { RootKeyMetaSpec } from "../../streams/keyring.ts";
import { AT, memoryStore } from "../projections/memory-store.ts";
import { useTempDirs } from "../store/helpers.ts";

interface LogLine {
  level: number;
  msg: string;
  keyId?: string;
  retryMs?: number;
}

function capturingLogger() {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) if (line) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream), lines };
}

/** A keystore whose reads or writes of chosen keys fail a given number of times, as a busy disk would. */
class FlakyKeystore extends Keystore {
  readonly failLoads = new Map<string, number>();
  readonly failSaves = new Map<string, number>();
  readonly loads: string[] = [];

  override async load(keyId: string): Promise<Buffer | undefined> {
    this.loads.push(keyId);
    const left = this.failLoads.get(keyId) ?? 0;
    if (left > 0) {
      this.failLoads.set(keyId, left - 1);
      throw new KeystoreError(`cannot read keystore file ${keyId}.nks.json: EIO: i/o error`, true);
    }
    return super.load(keyId);
  }

  override async save(meta: Pick<RootKeyMetaSpec, "KeyID" | "Algorithm" | "CreateTime">, key: Buffer) {
    const left = this.failSaves.get(meta.KeyID) ?? 0;
    if (left > 0) {
      this.failSaves.set(meta.KeyID, left - 1);
      throw new Error(`ENOSPC: no space left on device, write ${meta.KeyID}.nks.json.tmp`);
    }
    return super.save(meta, key);
  }
}

describe("RootKeyMaterialSync", () => {
  const tempDir = useTempDirs();
  const syncs: RootKeyMaterialSync[] = [];
  afterEach(async () => {
    for (const s of syncs.splice(0)) await s.stop();
  });

  /** Keys made by a leader whose keystore is `dir` (or none), then a sync on a fresh keyring. */
  async function setUp(options: { keys: number; kek?: boolean; leaderKeystore?: boolean }) {
    const { store, tables, write } = await memoryStore();
    const dir = await tempDir();
    const clusterKek = options.kek ? randomKek() : undefined;
    const leader = {
      keyring: new Keyring(),
      keystore: options.leaderKeystore === false ? undefined : new Keystore(dir, clusterKek),
      clusterKek,
    };
    const ids: string[] = [];
    for (let i = 0; i < options.keys; i++) {
      const data = await createRootKey(leader, { nowMs: AT, onlyIfNoActiveKey: false, rekey: false });
      await write(rootKeyCreatedDraft(data));
      ids.push(data.Meta.KeyID);
    }
    const keystore = new FlakyKeystore(dir, clusterKek);
    const keyring = new Keyring();
    const clock = new VirtualClock(AT);
    const { logger, lines } = capturingLogger();
    const sync = new RootKeyMaterialSync({
      store,
      rootKeys: tables.rootKeys,
      keyring,
      keystore,
      clusterKek,
      logger,
      clock,
    });
    syncs.push(sync);
    return { store, tables, write, ids, leader, keystore, keyring, clock, lines, sync, dir };
  }

  it("obtains the other keys at once when one cannot be read now, and that one after the retry", async () => {
    const t = await setUp({ keys: 3 });
    const [a, b, c] = t.ids as [string, string, string];
    t.keystore.failLoads.set(b, 1);
    await t.sync.start();
    expect([a, b, c].map((id) => t.keyring.has(id))).toEqual([true, false, true]);
    expect(t.sync.unavailable()).toEqual([b]);
    const warning = t.lines.find((l) => l.keyId === b)!;
    expect(warning).toMatchObject({ level: 40, retryMs: 1000 });
    expect(warning.msg).toMatch(new RegExp(`^cannot obtain root key ${b} material now: .*EIO`));
    expect(warning.msg).toMatch(/Trying again in 1s; the other keys are not held up$/);

    t.clock.advance(999);
    await t.sync.idle();
    expect(t.keyring.has(b)).toBe(false);
    t.clock.advance(1);
    await t.sync.idle();
    expect(t.keyring.get(b)?.key.equals(t.leader.keyring.get(b)!.key)).toBe(true);
    expect(t.sync.unavailable()).toEqual([]);
    expect(t.clock.pending).toBe(0);
  });

  it("backs off 1s, 2s, 4s ... up to a minute while a key stays unreadable", async () => {
    const t = await setUp({ keys: 1 });
    const [a] = t.ids as [string];
    t.keystore.failLoads.set(a, 9);
    await t.sync.start();
    const loads = () => t.keystore.loads.filter((id) => id === a).length;
    let attempts = 1;
    for (const delay of [1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000]) {
      t.clock.advance(delay - 1);
      await t.sync.idle();
      expect(loads()).toBe(attempts);
      t.clock.advance(1);
      await t.sync.idle();
      expect(loads()).toBe(++attempts);
    }
    const retries = t.lines.filter((l) => l.keyId === a).map((l) => l.retryMs);
    expect(retries).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000]);
    t.clock.advance(60_000);
    await t.sync.idle();
    expect(t.keyring.has(a)).toBe(true);
  });

  it("retries a key whose keystore write failed, and holds it only once it is kept", async () => {
    const t = await setUp({ keys: 2, kek: true, leaderKeystore: false });
    const [a, b] = t.ids as [string, string];
    t.keystore.failSaves.set(a, 1);
    await t.sync.start();
    expect([t.keyring.has(a), t.keyring.has(b)]).toEqual([false, true]);
    expect(t.lines.find((l) => l.keyId === a)?.msg).toMatch(/ENOSPC/);
    t.clock.advance(1000);
    await t.sync.idle();
    expect(t.keyring.has(a)).toBe(true);
    expect((await readdir(t.dir)).sort()).toEqual([`${a}.nks.json`, `${b}.nks.json`].sort());
  });

  it("says once, clearly, that a key can never be had without the cluster KEK, and does not retry it", async () => {
    const t = await setUp({ keys: 2, kek: true, leaderKeystore: false });
    const [a, b] = t.ids as [string, string];
    // This server was started without the KEK.
    const { store, tables } = t;
    const { logger, lines } = capturingLogger();
    const keyring = new Keyring();
    const sync = new RootKeyMaterialSync({
      store,
      rootKeys: tables.rootKeys,
      keyring,
      keystore: new Keystore(await tempDir()),
      logger,
      clock: t.clock,
    });
    syncs.push(sync);
    await sync.start();
    t.clock.advance(10 * 60_000);
    await sync.idle();
    for (const id of [a, b]) {
      const said = lines.filter((l) => l.keyId === id);
      expect(said).toHaveLength(1);
      expect(said[0]!.msg).toMatch(
        new RegExp(
          `^root key ${id} material unavailable: .*wrapped under cluster KEK [0-9a-f]{16}, but this server has no keyring_kek`,
        ),
      );
    }
    expect([...sync.unavailable()].sort()).toEqual([a, b].sort());
    expect(t.clock.pending).toBe(0);
  });

  it("forgets a deleted key: memory, keystore and any pending retry", async () => {
    const t = await setUp({ keys: 3 });
    const [a, b] = t.ids as [string, string];
    t.keystore.failLoads.set(b, 5);
    await t.sync.start();
    expect(t.keyring.has(a)).toBe(true);
    expect(t.clock.pending).toBe(1);
    const outcomes = await t.write(
      { type: "RootKeyDeleted", v: 1, data: { KeyID: a } },
      { type: "RootKeyDeleted", v: 1, data: { KeyID: b } },
    );
    expect(outcomes.map((o) => o.status)).toEqual(["applied", "applied"]);
    await t.sync.idle();
    expect(t.keyring.has(a)).toBe(false);
    expect(t.clock.pending).toBe(0);
    expect(t.sync.unavailable()).toEqual([]);
    const files = await readdir(t.dir);
    expect(files).not.toContain(`${a}.nks.json`);
    expect(files).not.toContain(`${b}.nks.json`);
  });
});
