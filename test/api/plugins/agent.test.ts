import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";

describe("agent endpoints", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ args: ["--server-name", "alpha"] });
  });
  afterAll(async () => {
    await s.stop();
  });

  const port = () => Number(s.address.split(":").pop());

  it("answers /v1/agent/self with the member, Nomad's config fields and the stats nomad agent-info prints", async () => {
    const res = await s.call("/v1/agent/self");
    expect(res.status).toBe(200);
    const self = (await res.json()) as {
      config: Record<string, unknown>;
      member: Record<string, unknown>;
      stats: Record<string, Record<string, string>>;
    };
    expect(self.member).toEqual({
      Name: "alpha.global",
      Addr: "127.0.0.1",
      Port: port(),
      Tags: expect.objectContaining({
        role: "nomad",
        region: "global",
        dc: "dc1",
        build: "1.6.1",
        vsn: "1",
        raft_vsn: "3",
        id: "alpha",
        rpc_addr: "127.0.0.1",
        port: String(port()),
        bootstrap: "1",
      }),
      Status: "alive",
      ProtocolMin: 1,
      ProtocolMax: 5,
      ProtocolCur: 2,
      DelegateMin: 2,
      DelegateMax: 5,
      DelegateCur: 4,
    });
    expect(self.config).toMatchObject({
      NodeName: "alpha",
      Region: "global",
      Datacenter: "dc1",
      Server: { Enabled: true, NumSchedulers: 4 },
      Client: { Enabled: false },
      Version: { Version: "1.6.1" },
    });
    expect(Object.keys(self.stats).sort()).toEqual(["chronomad", "nomad", "raft", "runtime", "serf"]);
    expect(self.stats.nomad).toMatchObject({ server: "true", leader: "true", leader_addr: s.address });
    expect(self.stats.raft).toMatchObject({
      state: "Leader",
      last_log_index: String(s.log.lastIndex()),
      applied_index: String(s.store.appliedIndex),
      num_peers: "0",
      last_contact: "0",
    });
    expect(self.stats.serf).toMatchObject({ members: "1", failed: "0", left: "0" });
    expect(self.stats.runtime).toMatchObject({
      "kernel.name": process.platform,
      arch: process.arch,
      version: process.version,
    });
    expect(Number(self.stats.runtime?.cpu_count)).toBeGreaterThan(0);
    expect(Number(self.stats.runtime?.goroutines)).toBeGreaterThan(0);
    expect(self.stats.chronomad?.log_last_index).toBe(String(s.log.lastIndex()));
    expect((await s.call("/v1/agent/self", { method: "PUT" })).status).toBe(405);
  });

  it("lists the cluster's servers as serf members", async () => {
    const res = await s.call("/v1/agent/members");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { Members: { Name: string; Port: number; Status: string }[] };
    expect(body).toMatchObject({ ServerName: "alpha", ServerRegion: "global", ServerDC: "dc1" });
    expect(body.Members).toHaveLength(1);
    expect(body.Members[0]).toMatchObject({ Name: "alpha.global", Port: port(), Status: "alive" });
  });

  it("joins a server already in the cluster and refuses any other, saying why", async () => {
    const ok = await s.call(`/v1/agent/join?address=${s.address}`, { method: "PUT" });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ num_joined: 1, error: "" });

    const byHost = await s.call("/v1/agent/join?address=127.0.0.1&address=alpha.global", { method: "POST" });
    expect(await byHost.json()).toEqual({ num_joined: 2, error: "" });

    const other = await s.call("/v1/agent/join?address=10.0.0.9:4648", { method: "PUT" });
    expect(other.status).toBe(400);
    expect(await other.text()).toMatch(/cannot join 10\.0\.0\.9:4648: .*shared log.*not by gossip/);

    const none = await s.call("/v1/agent/join", { method: "PUT" });
    expect(none.status).toBe(400);
    expect(await none.text()).toBe("missing address to join");
  });

  it("ignores force-leave of an unknown node, as serf, and refuses it for a live server", async () => {
    expect((await s.call("/v1/agent/force-leave?node=nope", { method: "PUT" })).status).toBe(200);
    const self = await s.call("/v1/agent/force-leave?node=alpha.global&prune=1", { method: "PUT" });
    expect(self.status).toBe(400);
    expect(await self.text()).toMatch(/cannot force alpha\.global to leave: .*shared log/);
    const none = await s.call("/v1/agent/force-leave", { method: "PUT" });
    expect(none.status).toBe(400);
    expect(await none.text()).toBe("missing node to force leave");
  });

  it("lists the one region", async () => {
    expect(await (await s.call("/v1/regions")).json()).toEqual(["global"]);
  });

  it("answers summary reconciliation without writing: the summaries are a projection", async () => {
    const before = s.log.lastIndex();
    const res = await s.call("/v1/system/reconcile/summaries", { method: "PUT" });
    expect(res.status).toBe(200);
    expect(s.log.lastIndex()).toBe(before);
    expect((await s.call("/v1/system/reconcile/summaries")).status).toBe(405);
  });
});
