import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { variableKey } from "../../projections/variables.ts";
import type { ServerConfig } from "../../src/config.ts";
import { createRootKey, rootKeyCreatedDraft } from "../../src/keyring/create-root-key.ts";
import { Keyring } from "../../src/keyring/keyring.ts";
import { KeyringRekey } from "../../src/services/keyring-rekey.ts";
import type { ServiceContext } from "../../src/services/service.ts";
import { type Draft, type Written, writeEvents } from "../../src/store/writer.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import { decryptItems, encryptItems } from "../../src/variables/variable-crypto.ts";
import type { VariableApplied } from "../../streams/variables.ts";
import { AT, memoryStore } from "../projections/memory-store.ts";

const NS = "default";

async function setUp() {
  const { store, tables } = await memoryStore();
  const keyring = new Keyring();
  const clock = new VirtualClock(AT);
  const actor = { kind: "server", id: "s1" } as const;
  const plain = (drafts: readonly Draft[]) => writeEvents(store, clock.now(), actor, drafts);
  const context = (write: (drafts: readonly Draft[]) => Promise<Written> = plain): ServiceContext => ({
    config: {} as ServerConfig,
    store,
    tables,
    clock,
    logger: pino({ level: "silent" }),
    failover: false,
    write,
  });
  const rotate = async (rekey = false) => {
    const data = await createRootKey({ keyring }, { nowMs: clock.now(), onlyIfNoActiveKey: false, rekey });
    const { outcomes } = await plain([rootKeyCreatedDraft(data)]);
    expect(outcomes[0]?.status).toBe("applied");
    return data.Meta.KeyID;
  };
  const setVar = async (path: string, items: Record<string, string>, keyId: string) => {
    const sealed = encryptItems(keyring, keyId, items);
    const data: VariableApplied = {
      Op: "set",
      Namespace: NS,
      Path: path,
      Var: { Namespace: NS, Path: path, ...sealed, CreateTime: AT * 1e6, ModifyTime: AT * 1e6 },
    };
    const { outcomes } = await plain([{ type: "VariableApplied", v: 1, data }]);
    expect(outcomes[0]?.status).toBe("applied");
  };
  const row = (path: string) => tables.variables.get(variableKey(NS, path))!;
  const state = (keyId: string) => tables.rootKeys.get(keyId)?.State;
  return { store, tables, keyring, clock, context, rotate, setVar, row, state, plain };
}

const FAST = { perSecond: Number.POSITIVE_INFINITY, batch: 2, retryMs: 30_000 };

describe("KeyringRekey", () => {
  it("ignores a CAS conflict: the concurrent write, made under the active key, stands", async () => {
    const t = await setUp();
    const old = await t.rotate();
    for (const p of ["app/a", "app/b", "app/c"]) await t.setVar(p, { v: p }, old);
    const active = await t.rotate(true);
    let raced = false;
    const ctx = t.context(async (drafts) => {
      if (!raced && drafts.some((d) => d.type === "VariableApplied")) {
        raced = true;
        // Someone writes app/a between the service's read and its CAS.
        await t.setVar("app/a", { v: "theirs" }, active);
      }
      return t.plain(drafts);
    });
    const service = new KeyringRekey(t.keyring, FAST);
    service.start(ctx);
    await service.settled();
    await service.stop();
    expect(raced).toBe(true);
    for (const p of ["app/a", "app/b", "app/c"]) expect(t.row(p).KeyID).toBe(active);
    expect(decryptItems(t.keyring, t.row("app/a"))).toEqual({ v: "theirs" });
    expect(decryptItems(t.keyring, t.row("app/c"))).toEqual({ v: "app/c" });
    expect(t.state(old)).toBe("inactive");
  });

  it("a new leader resumes a rekey the previous one left half done", async () => {
    const t = await setUp();
    const old = await t.rotate();
    const paths = ["p/1", "p/2", "p/3", "p/4", "p/5"];
    for (const p of paths) await t.setVar(p, { p }, old);
    const active = await t.rotate(true);
    const first = new KeyringRekey(t.keyring, FAST);
    first.start(
      t.context(async (drafts) => {
        const written = await t.plain(drafts);
        void first.stop(); // leadership lost after its first append
        return written;
      }),
    );
    await first.settled();
    const moved = paths.filter((p) => t.row(p).KeyID === active);
    expect(moved).toEqual(["p/1", "p/2"]);
    expect(t.state(old)).toBe("rekeying");

    const second = new KeyringRekey(t.keyring, FAST);
    second.start(t.context());
    await second.settled();
    await second.stop();
    for (const p of paths) expect(t.row(p).KeyID).toBe(active);
    expect(t.state(old)).toBe("inactive");
  });

  it("waits while it cannot open a variable, and tries again after retryMs", async () => {
    const t = await setUp();
    const old = await t.rotate();
    await t.setVar("app/x", { x: "1" }, old);
    const material = t.keyring.get(old)!;
    await t.rotate(true);
    t.keyring.delete(old);
    const service = new KeyringRekey(t.keyring, FAST);
    service.start(t.context());
    await service.settled();
    expect(t.state(old)).toBe("rekeying");
    expect(t.row("app/x").KeyID).toBe(old);

    t.keyring.add(material);
    t.clock.advance(FAST.retryMs - 1);
    await service.settled();
    expect(t.state(old)).toBe("rekeying");
    t.clock.advance(1);
    await service.settled();
    await service.stop();
    expect(t.state(old)).toBe("inactive");
    expect(decryptItems(t.keyring, t.row("app/x"))).toEqual({ x: "1" });
    expect(t.clock.pending).toBe(0);
  });

  it("paces its appends at perSecond", async () => {
    const t = await setUp();
    const old = await t.rotate();
    for (const p of ["r/1", "r/2", "r/3", "r/4"]) await t.setVar(p, { p }, old);
    const active = await t.rotate(true);
    const service = new KeyringRekey(t.keyring, { perSecond: 2, batch: 2, retryMs: 30_000 });
    service.start(t.context());
    // The first append goes at once; the second waits for the first one's share: 2 variables at 2/s.
    await expect.poll(() => t.row("r/2").KeyID).toBe(active);
    expect(t.row("r/3").KeyID).toBe(old);
    t.clock.advance(999);
    await new Promise((r) => setImmediate(r));
    expect(t.row("r/3").KeyID).toBe(old);
    t.clock.advance(1);
    await service.settled();
    await service.stop();
    expect(t.row("r/4").KeyID).toBe(active);
    expect(t.state(old)).toBe("inactive");
  });
});
