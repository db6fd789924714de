import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";

describe("/v1/operator/raft", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ args: ["--server-name", "alpha"] });
  });
  afterAll(async () => {
    await s.stop();
  });

  it("answers the configuration from the election: every server a voter, the leader marked", async () => {
    const res = await s.call("/v1/operator/raft/configuration");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { Servers: unknown[]; Index: number };
    expect(body.Servers).toEqual([
      { ID: "alpha", Node: "alpha.global", Address: s.address, Leader: true, Voter: true, RaftProtocol: "3" },
    ]);
    // The index at which the current leader established itself.
    expect(body.Index).toBeGreaterThan(0);
    expect(body.Index).toBeLessThanOrEqual(s.log.lastIndex());
  });

  it("refuses to remove a peer, with Nomad's text for an unknown one", async () => {
    const del = (query: string) => s.call(`/v1/operator/raft/peer${query}`, { method: "DELETE" });
    const unknown = await del("?id=nope");
    expect(unknown.status).toBe(400);
    expect(await unknown.text()).toBe('id "nope" was not found in the Raft configuration');
    const byAddress = await del("?address=10.0.0.1:4647");
    expect(await byAddress.text()).toBe('address "10.0.0.1:4647" was not found in the Raft configuration');
    const known = await del("?id=alpha");
    expect(known.status).toBe(400);
    expect(await known.text()).toMatch(/cannot remove alpha: chronomad servers are not Raft peers/);
    expect(await (await del("")).text()).toBe(
      "Must specify either ?id with the server's ID or ?address with IP:port of peer to remove",
    );
    expect(await (await del("?id=a&address=b")).text()).toBe("Must specify only one of ?id or ?address");
  });
});
