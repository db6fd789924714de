import { readdir } from "node:fs/promises";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { ServerConfig } from "../../src/config.ts";
import { Keyring } from "../../src/keyring/keyring.ts";
import { KeyringInitializer } from "../../src/keyring/keyring-initializer.ts";
import { Keystore } from "../../src/keyring/keystore.ts";
import type { ServiceContext } from "../../src/services/service.ts";
import { type Draft, type Writable, type Written, writeEvents } from "../../src/store/writer.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import type { RootKeyCreated } from "../../streams/keyring.ts";
import { AT, memoryStore } from "../projections/memory-store.ts";
import { useTempDirs } from "../store/helpers.ts";

const OTHER = "6c4f0b2d-3e5a-4f7b-9c8d-0e1f2a3b4c5d";

const otherLeadersKey: Draft = {
  type: "RootKeyCreated",
  v: 2,
  data: {
    Meta: { KeyID: OTHER, Algorithm: "aes256-gcm", CreateTime: AT * 1e6, State: "active" },
    SigningKey: { Algorithm: "EdDSA", Curve: "Ed25519", X: "x" },
    Wrapped: null,
    OnlyIfNoActiveKey: true,
    Rekey: false,
  } satisfies RootKeyCreated,
};

describe("KeyringInitializer", () => {
  const tempDir = useTempDirs();

  async function setUp(write?: (drafts: readonly Writable[], plain: typeof writeEvents) => Promise<Written>) {
    const { store, tables } = await memoryStore();
    const keyring = new Keyring();
    const keystore = Keystore.inDataDir(await tempDir());
    const clock = new VirtualClock(AT);
    const actor = { kind: "server", id: "s1" } as const;
    const plain = (drafts: readonly Writable[]) => writeEvents(store, AT, actor, drafts);
    const ctx: ServiceContext = {
      config: {} as ServerConfig,
      store,
      tables,
      clock,
      logger: pino({ level: "silent" }),
      failover: false,
      write: write ? (drafts) => write(drafts, writeEvents) : plain,
    };
    const initializer = new KeyringInitializer({ keyring, keystore });
    return { store, tables, keyring, keystore, clock, ctx, initializer, plain };
  }

  it("keeps the material before the key reaches the log", async () => {
    let seen: { inKeyring: boolean; inKeystore: boolean } | undefined;
    const t = await setUp(async (drafts, write) => {
      const id = ((drafts[0] as Draft).data as RootKeyCreated).Meta.KeyID;
      seen = { inKeyring: t.keyring.has(id), inKeystore: (await t.keystore.load(id)) !== undefined };
      return write(t.store, AT, { kind: "server", id: "s1" }, drafts);
    });
    t.initializer.start(t.ctx);
    await t.initializer.settled();
    expect(seen).toEqual({ inKeyring: true, inKeystore: true });
    const [row] = [...t.tables.rootKeys.all()];
    expect(row?.State).toBe("active");
    expect(t.keyring.get(row!.KeyID)?.signingPublicKey.X).toBe(row!.SigningKey.X);
  });

  it("writes nothing when a key is already active", async () => {
    const t = await setUp();
    await t.plain([otherLeadersKey]);
    const before = t.store.appliedIndex;
    t.initializer.start(t.ctx);
    await t.initializer.settled();
    expect(t.store.appliedIndex).toBe(before);
    expect(t.keyring.size).toBe(0);
  });

  it("drops its own key when another leader's landed first", async () => {
    const t = await setUp(async (drafts, write) => {
      await write(t.store, AT, { kind: "server", id: "s2" }, [otherLeadersKey]);
      return write(t.store, AT, { kind: "server", id: "s1" }, drafts);
    });
    t.initializer.start(t.ctx);
    await t.initializer.settled();
    expect([...t.tables.rootKeys.all()].map((k) => k.KeyID)).toEqual([OTHER]);
    expect(t.keyring.size).toBe(0);
    expect(await readdir(t.keystore.dir)).toEqual([]);
  });

  it("retries a write that failed, and stops retrying once stopped", async () => {
    let attempts = 0;
    const t = await setUp(async (drafts, write) => {
      attempts++;
      if (attempts === 1) throw new Error("log unreachable");
      return write(t.store, AT, { kind: "server", id: "s1" }, drafts);
    });
    t.initializer.start(t.ctx);
    await t.initializer.settled();
    expect(t.tables.rootKeys.size).toBe(0);
    t.clock.advance(5_000);
    await t.initializer.settled();
    expect(attempts).toBe(2);
    expect(t.tables.rootKeys.size).toBe(1);

    const idle = await setUp(async () => {
      attempts++;
      throw new Error("log unreachable");
    });
    attempts = 0;
    idle.initializer.start(idle.ctx);
    await idle.initializer.stop();
    idle.clock.advance(60_000);
    await idle.initializer.settled();
    expect(attempts).toBe(1);
  });
});
