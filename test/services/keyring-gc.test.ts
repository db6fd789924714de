import { afterEach, describe, expect, it } from "vitest";
import { historyKey } from "../../projections/history.ts";
import { KeyringGc } from "../../src/services/keyring-gc.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { Scenario, serviceJob } from "./scheduler/scenario.ts";

const MINUTE = 60_000;

interface KeyMeta {
  KeyID: string;
  State: string;
}

async function keyStates(call: (path: string) => Promise<Response>): Promise<Record<string, string>> {
  const keys = (await (await call("/v1/operator/keyring/keys")).json()) as KeyMeta[];
  return Object.fromEntries(keys.map((k) => [k.KeyID, k.State]));
}

const activeOf = (states: Record<string, string>) => Object.keys(states).find((k) => states[k] === "active")!;

function gcOf(server: TestServer): KeyringGc {
  const gc = server.services.find((s) => s instanceof KeyringGc);
  if (!gc) throw new Error("no keyring GC service");
  return gc as KeyringGc;
}

describe("root key GC and rotation (Nomad's CoreJobRootKeyRotateOrGC)", () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it("keeps a key that signed a live allocation or encrypts a variable, and deletes it once unused", async () => {
    const s = await Scenario.start();
    cleanup.push(() => s.stop());
    const call = (path: string) => s.server.call(path);
    const rotate = async () => expect((await s.call("/v1/operator/keyring/rotate", "PUT")).status).toBe(200);
    await s.addNode();
    const signer = activeOf(await keyStates(call));
    await s.register(serviceJob("web", 1));
    await s.idle();
    const [alloc] = s.allocs("web");
    expect(alloc!.SigningKeyID).toBe(signer);
    await rotate();
    const sealer = activeOf(await keyStates(call));
    expect((await s.call("/v1/var/app/db", "PUT", { Items: { password: "hunter2" } })).status).toBe(200);
    await rotate();
    const unused = activeOf(await keyStates(call));
    await rotate();
    const active = activeOf(await keyStates(call));

    // Past root_key_gc_threshold (1h) and a few root_key_gc_interval (10m) passes.
    await s.advance(75 * MINUTE, 15_000);
    await gcOf(s.server).settled();
    expect(await keyStates(call)).toEqual({
      [signer]: "inactive",
      [sealer]: "inactive",
      [active]: "active",
    });

    // The allocation is done on both sides, the variable gone: nothing uses either key.
    await s.register(serviceJob("web", 0));
    await s.idle();
    await s.report([alloc!], "complete");
    expect((await s.call("/v1/var/app/db", "DELETE")).status).toBeLessThan(300);
    await s.advance(10 * MINUTE, 15_000);
    await gcOf(s.server).settled();
    await expect.poll(() => keyStates(call)).toEqual({ [active]: "active" });
    // The leader deleted them, and the audit trail says so.
    const history = s.server.history.entries(historyKey("root_key", unused));
    expect(history.at(-1)).toMatchObject({ Field: "(deleted)", Actor: { kind: "server" } });
  });

  it("rotates the active key once it is older than root_key_rotation_threshold, then collects the old one", async () => {
    const clock = new VirtualClock();
    const server = await startTestServer({
      deps: { clock },
      args: [
        "--root-key-rotation-threshold",
        "2h",
        "--root-key-gc-threshold",
        "1h",
        "--root-key-gc-interval",
        "10m",
      ],
    });
    cleanup.push(() => server.stop());
    const call = (path: string) => server.call(path);
    const gc = gcOf(server);
    const first = activeOf(await keyStates(call));
    // One interval at a time: each pass re-arms the next when it is over.
    const tick = async () => {
      clock.advance(10 * MINUTE);
      await gc.settled();
      await server.store.caughtUp();
    };
    for (let i = 0; i < 11; i++) await tick();
    expect(await keyStates(call)).toEqual({ [first]: "active" });

    await tick(); // 2h: due
    const rotated = await keyStates(call);
    expect(rotated[first]).toBe("inactive");
    const second = activeOf(rotated);
    expect(second).not.toBe(first);
    expect(server.keyring.has(second)).toBe(true);
    // A rotating pass ends there, as in Nomad: the old key goes at the next one.
    await tick();
    expect(await keyStates(call)).toEqual({ [second]: "active" });
    expect(server.keyring.has(first)).toBe(false);
  });

  it("PUT /v1/system/gc collects every unused inactive key whatever its age, and rotates nothing", async () => {
    const s = await startTestServer();
    cleanup.push(() => s.stop());
    const call = (path: string) => s.call(path);
    const rotate = async () =>
      expect((await s.call("/v1/operator/keyring/rotate", { method: "PUT" })).status).toBe(200);
    const first = activeOf(await keyStates(call));
    await rotate();
    const sealer = activeOf(await keyStates(call));
    const put = await s.call("/v1/var/app/db", {
      method: "PUT",
      body: JSON.stringify({ Items: { a: "b" } }),
    });
    expect(put.status).toBe(200);
    await rotate();
    const active = activeOf(await keyStates(call));

    const res = await s.call("/v1/system/gc", { method: "PUT" });
    expect(res.status).toBe(200);
    expect(await keyStates(call)).toEqual({ [sealer]: "inactive", [active]: "active" });
    expect(Number(res.headers.get("x-nomad-index"))).toBeGreaterThan(0);
    const history = s.history.entries(historyKey("root_key", first));
    expect(history.at(-1)).toMatchObject({ Field: "(deleted)", Actor: { kind: "remote" } });
  });
});
