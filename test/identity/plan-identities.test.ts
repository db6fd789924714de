import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import type { RootKeyRow } from "../../projections/root-keys.ts";
import { IdentityVerifier } from "../../src/identity/identity-verifier.ts";
import { PlanIdentities } from "../../src/identity/plan-identities.ts";
import type { Plan } from "../../src/services/scheduler/plan.ts";
import { PLACEMENTS_PER_RECORD, planRecords } from "../../src/services/scheduler/plan-applier.ts";
import type { Table } from "../../src/store/table.ts";
import { Scenario, serviceJob } from "../services/scheduler/scenario.ts";
import { IdentityWorld } from "./identity-fixtures.ts";

describe("the plan applier and workload identities", () => {
  const running: Scenario[] = [];
  const start = async () => {
    const s = await Scenario.start();
    running.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop();
  });

  const tables = (s: Scenario) => ({
    allocs: s.server.store.table<AllocRow>("allocs"),
    rootKeys: s.server.store.table<RootKeyRow>("root_keys") as Table<RootKeyRow>,
  });
  const activeKey = (s: Scenario) => [...tables(s).rootKeys.all()].find((k) => k.State === "active")!.KeyID;

  it("stamps placements with the active key, indexes them by it until they are done on both sides", async () => {
    const s = await start();
    for (let i = 0; i < 2; i++) await s.addNode();
    await s.register(serviceJob("web", 2));
    await s.idle();
    const key = activeKey(s);
    const placed = s.allocs("web");
    expect(placed).toHaveLength(2);
    expect(placed.every((a) => a.SigningKeyID === key)).toBe(true);
    const { allocs } = tables(s);
    expect(
      allocs
        .by("signing_key", key)
        .map((a) => a.ID)
        .sort(),
    ).toEqual(placed.map((a) => a.ID).sort());

    // The identity the client is served verifies, at the virtual time it was placed in.
    const node = s.nodes.find((n) => n.id === placed[0]!.NodeID)!;
    const pulled = await node.rpc<{ Allocs: (AllocRow & { SignedIdentities?: Record<string, string> })[] }>(
      "Alloc.GetAllocs",
      { AllocIDs: [placed[0]!.ID] },
    );
    const jwt = pulled.body.Allocs[0]!.SignedIdentities!.server!;
    const verified = new IdentityVerifier(tables(s)).verify(jwt, s.clock.now());
    expect(verified.claims.iat).toBe(Math.floor(placed[0]!.CreateTime / 1e9));

    // Done on one side only, it stays: finished by the client while the
    // server still wants it (Nomad's index keeps such an allocation until it
    // is garbage collected) ...
    await s.report([placed[0]!], "complete");
    expect(allocs.countBy("signing_key", key)).toBe(2);
    // ... or stopped by the server while the client still runs it (poststop tasks).
    await s.register(serviceJob("web", 0));
    await s.idle();
    expect(allocs.get(placed[1]!.ID)!.DesiredStatus).toBe("stop");
    expect(allocs.countBy("signing_key", key)).toBe(2);
    // Done on both sides: out.
    await s.report([placed[1]!], "complete");
    expect(allocs.by("signing_key", key).map((a) => a.ID)).toEqual([placed[0]!.ID]);
  });

  it("signs an in-place update again with the key active then, as Nomad's plan applier does", async () => {
    const s = await start();
    await s.addNode();
    await s.register(serviceJob("web", 1, { Update: { MaxParallel: 0 } }));
    await s.idle();
    const [before] = s.allocs("web");
    const first = activeKey(s);
    expect(before!.SigningKeyID).toBe(first);
    const rotated = await s.call("/v1/operator/keyring/rotate", "PUT");
    expect(rotated.status, rotated.text).toBe(200);
    const second = activeKey(s);
    expect(second).not.toBe(first);
    // A restart policy change reaches no task: the allocation is updated in place.
    await s.register(
      serviceJob(
        "web",
        1,
        { Update: { MaxParallel: 0 } },
        { RestartPolicy: { Attempts: 5, Interval: 3_600e9, Delay: 15e9, Mode: "fail" } },
      ),
    );
    await s.idle();
    const [after] = s.allocs("web");
    expect(after!.ID).toBe(before!.ID);
    expect(after!.Job?.Version).toBe(1);
    expect(after!.SigningKeyID).toBe(second);
    expect(tables(s).allocs.countBy("signing_key", first)).toBe(0);
  });

  it("puts the key on every record that places or updates in place, and nothing else", () => {
    const plan = {
      evalID: "e1",
      job: { Namespace: "default", ID: "web", Version: 0 },
      deploymentID: "",
      // One and a half records' worth: two records.
      placements: Array.from({ length: PLACEMENTS_PER_RECORD * 1.5 }, (_, i) => ({
        ID: `a${i}`,
        Name: `web.web[${i}]`,
        TaskGroup: "web",
        NodeID: "n",
      })),
      inPlace: [],
      stops: new Map(),
      disconnected: [],
      reconnected: [],
      followups: [],
      deployment: null,
      deploymentUpdates: [],
    } as unknown as Plan;
    let n = 0;
    const newID = () => `p${n++}`;
    expect(planRecords(plan, newID, "k1").map((r) => r.SigningKeyID)).toEqual(["k1", "k1"]);
    expect(planRecords(plan, newID).map((r) => "SigningKeyID" in r)).toEqual([false, false]);
    const stopsOnly = { ...plan, placements: [] } as unknown as Plan;
    expect(planRecords(stopsOnly, newID, "k1").map((r) => "SigningKeyID" in r)).toEqual([false]);
  });

  it("without the active key's material places without identities, and says why once", async () => {
    const world = new IdentityWorld();
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const identities = new PlanIdentities(world.keyring, logger);
    expect(identities.signingKey(world.rootKeys)).toBeUndefined();
    const key = await world.addKey({ held: false });
    expect(identities.signingKey(world.rootKeys)).toBeUndefined();
    expect(identities.signingKey(world.rootKeys)).toBeUndefined();
    expect(lines.map((l) => l.reason)).toEqual([
      "no active root key",
      `this server does not hold the material of active root key ${key.keyId}`,
    ]);
    const held = await world.addKey();
    expect(identities.signingKey(world.rootKeys)).toBe(held.keyId);
    expect(lines.at(-1)?.msg).toBe("workload identities are signed again");
  });
});
