import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";

const URL = "/v1/operator/autopilot/configuration";

describe("/v1/operator/autopilot", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ args: ["--server-name", "alpha", "--leader-session-timeout", "6s"] });
  });
  afterAll(async () => {
    await s.stop();
  });

  const put = (body: unknown, query = "") =>
    s.call(`${URL}${query}`, { method: "PUT", body: JSON.stringify(body) });

  it("answers the rules that hold, with the contact threshold the election's session timeout", async () => {
    const res = await s.call(URL);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      CleanupDeadServers: true,
      LastContactThreshold: "6s",
      MaxTrailingLogs: 250,
      MinQuorum: 0,
      ServerStabilizationTime: "10s",
      EnableRedundancyZones: false,
      DisableUpgradeMigration: false,
      EnableCustomUpgrades: false,
      CreateIndex: 1,
      ModifyIndex: 1,
    });
  });

  it("accepts a PUT that changes nothing and refuses one that would, naming the field", async () => {
    const current = (await (await s.call(URL)).json()) as Record<string, unknown>;
    const same = await put(current);
    expect(same.status).toBe(200);
    expect(await same.json()).toBe(true);
    expect(await (await put(current, "?cas=1")).json()).toBe(true);
    expect(await (await put(current, "?cas=99")).json()).toBe(false);

    const changed = await put({ ...current, MaxTrailingLogs: 10 });
    expect(changed.status).toBe(400);
    expect(await changed.text()).toMatch(
      /^autopilot configuration cannot be changed \(MaxTrailingLogs is 250, not 10\): chronomad servers are not Raft peers/,
    );
    const bad = await put({ ...current, LastContactThreshold: "soon" });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toBe('Error parsing autopilot config: time: invalid duration "soon"');
    expect((await s.call(URL)).status).toBe(200);
  });

  it("reports the servers' health from the election", async () => {
    const res = await s.call("/v1/operator/autopilot/health");
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ Healthy: true, FailureTolerance: 0, Leader: "alpha", Voters: ["alpha"] });
    expect(body.Servers).toEqual([
      {
        ID: "alpha",
        Name: "alpha",
        Address: s.address,
        SerfStatus: "alive",
        Version: "1.6.1",
        Leader: true,
        LastContact: "0s",
        LastTerm: 1,
        LastIndex: s.store.appliedIndex,
        Healthy: true,
        Voter: true,
        StableSince: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/),
      },
    ]);
  });
});
