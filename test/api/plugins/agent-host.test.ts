import { afterEach, describe, expect, it } from "vitest";
import { environment } from "../../../src/diagnostics/host-data.ts";
import type { ServerMember } from "../../../src/leadership.ts";
import { FakeClientPeer } from "../../rpc/fake-client-peer.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { callsOf } from "./client-agent-fixtures.ts";

const servers: TestServer[] = [];
const agents: FakeClientPeer[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) a.close();
  for (const s of servers.splice(0)) await s.stop();
});

async function start(args: string[]) {
  const s = await startTestServer({ args });
  servers.push(s);
  return s;
}

describe("GET /v1/agent/host", () => {
  it("answers this server's host data bare, and as Agent.Host's reply when a server is named", async () => {
    const s = await start(["--server-name", "alpha", "--enable-debug"]);
    const res = await s.call("/v1/agent/host");
    expect(res.status).toBe(200);
    const data = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(data).sort()).toEqual(["Disk", "Environment", "Hosts", "Network", "OS", "ResolvConf"]);
    expect(data.OS).toMatch(/ Linux /);
    expect(data.Network).toContainEqual(
      expect.objectContaining({ type: "IPv4", address: "127.0.0.1", string: "127.0.0.1/8", mask_bits: "8" }),
    );
    expect(data.Environment).toMatchObject({ PATH: process.env.PATH });
    expect(Object.values(data.Disk as Record<string, { DiskMB: number; UsedMB: number }>)).not.toHaveLength(
      0,
    );

    const named = (await (await s.call("/v1/agent/host?server_id=leader")).json()) as Record<string, unknown>;
    expect(named.AgentID).toBe("alpha.global");
    expect(Object.keys(named.HostData as object)).toContain("Environment");
    const unknown = await s.call("/v1/agent/host?server_id=beta.global");
    expect([unknown.status, await unknown.text()]).toEqual([500, "unknown Nomad server beta.global"]);
    const both = await s.call("/v1/agent/host?server_id=a&node_id=b");
    expect([both.status, await both.text()]).toEqual([
      400,
      "Can only forward to either client node or server",
    ]);
    expect((await s.call("/v1/agent/host", { method: "PUT" })).status).toBe(405);
  });

  it("is refused without enable_debug when ACLs are off, and without agent:read when they are on", async () => {
    const plain = await start([]);
    expect((await plain.call("/v1/agent/host")).status).toBe(403);
    const acl = await start(["--acl-enabled"]);
    const bootstrap = (await (await acl.call("/v1/acl/bootstrap", { method: "POST" })).json()) as {
      SecretID: string;
    };
    expect((await acl.call("/v1/agent/host")).status).toBe(403);
    const res = await acl.call("/v1/agent/host", { headers: { "X-Nomad-Token": bootstrap.SecretID } });
    expect(res.status).toBe(200);
  });

  it("asks the named client agent through its Agent.Host", async () => {
    const s = await start(["--enable-debug"]);
    const reply = {
      AgentID: "node-1",
      HostData: { OS: "x86_64 node-1", Network: [], ResolvConf: "", Hosts: "", Environment: {}, Disk: {} },
    };
    const agent = new FakeClientPeer({ rpc: { "Agent.Host": () => reply } });
    agents.push(agent);
    await agent.connect(s.rpcAddress);
    const res = await s.call(`/v1/agent/host?node_id=${agent.id}`, { headers: { "X-Nomad-Token": "tok" } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(reply);
    expect(callsOf(agent, "Agent.Host")[0]).toMatchObject({
      NodeID: agent.id,
      ServerID: "",
      AuthToken: "tok",
    });
    const unknown = await s.call("/v1/agent/host?node_id=nope");
    expect([unknown.status, await unknown.text()]).toEqual([404, 'Unknown node "nope"']);
  });
});

describe("GET /v1/agent/host?server_id= naming another server", () => {
  it("is answered by that server, through this one", async () => {
    const a = await start(["--server-name", "a", "--enable-debug"]);
    const b = await start(["--server-name", "b", "--enable-debug"]);
    const members: ServerMember[] = [
      { name: "a", address: a.address, leader: true, self: true },
      { name: "b", address: b.address, leader: false, self: false },
    ];
    (a.leadership as { members: () => readonly ServerMember[] }).members = () => members;
    const res = await a.call("/v1/agent/host?server_id=b.global");
    expect(res.status).toBe(200);
    expect(((await res.json()) as { AgentID: string }).AgentID).toBe("b.global");
    // The same for a profile.
    const cmdline = await a.call("/v1/agent/pprof/cmdline?server_id=b");
    expect(cmdline.status).toBe(200);
  });
});

describe("host data's environment", () => {
  it("redacts Nomad's deny list and names holding TOKEN, SECRET, PASSWORD or KEY", () => {
    expect(
      environment({
        PATH: "/bin",
        VAULT_TOKEN: "v",
        AWS_ACCESS_KEY_ID: "a",
        MY_SECRET_THING: "s",
        db_password: "p",
        CHRONOMAD_KEYRING_KEK: "k",
        HOME: "/root",
      }),
    ).toEqual({
      PATH: "/bin",
      VAULT_TOKEN: "<redacted>",
      AWS_ACCESS_KEY_ID: "<redacted>",
      MY_SECRET_THING: "<redacted>",
      db_password: "<redacted>",
      CHRONOMAD_KEYRING_KEK: "<redacted>",
      HOME: "/root",
    });
  });
});
