import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { startAclServer } from "../../acl/acl-fixtures.ts";
import type { FakeClientOptions } from "../../rpc/fake-client-peer.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { agentWithAlloc, callsOf } from "./client-agent-fixtures.ts";

const running: TestServer[] = [];
const agents: { close(): void }[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) a.close();
  for (const s of running.splice(0)) await s.stop();
});

async function withAgent(options: FakeClientOptions) {
  const s = await startTestServer();
  running.push(s);
  const setup = await agentWithAlloc(s, options);
  agents.push(setup.agent);
  return { s, ...setup };
}

const usage = {
  ResourceUsage: {
    MemoryStats: { RSS: 59265024, Cache: 0, Swap: 0, Usage: 0, MaxUsage: 0, Measured: ["RSS", "Swap"] },
    CpuStats: { SystemMode: 0.5, UserMode: 1.5, TotalTicks: 2, Percent: 0.25, Measured: ["Percent"] },
    DeviceStats: [],
  },
  Tasks: {},
  Timestamp: 1795704226249152000,
};

const agentCalls: FakeClientOptions = {
  rpc: {
    "Allocations.Stats": () => ({ Stats: usage, Index: 0 }),
    "Allocations.Checks": () => ({ Results: null }),
    "Allocations.Restart": (args) => {
      if (args.TaskName === "zz") throw new Error("Could not find task runner for task: zz");
      return { Index: 0 };
    },
    "Allocations.Signal": () => ({ Index: 0 }),
    "Allocations.GarbageCollect": () => {
      throw new Error("No such allocation on client, or allocation not eligible for GC");
    },
    "Allocations.GarbageCollectAll": () => ({ Index: 0 }),
    "ClientStats.Stats": () => ({
      HostStats: { Uptime: 605, CPUTicksConsumed: 22.99, Memory: { Total: 1024 } },
    }),
    "NodeMeta.Read": () => ({ Meta: { a: "1" }, Dynamic: {}, Static: { a: "1" } }),
    "NodeMeta.Apply": (args) => {
      const meta = args.Meta as Record<string, string | null>;
      if (Object.hasOwn(meta, "")) throw new Error("RPC Error:: 400,metadata keys must not be empty");
      return { Meta: { a: "1", foo: "bar" }, Dynamic: meta, Static: { a: "1" } };
    },
  },
};

describe("/v1/client/allocation/:id/*", () => {
  it("reads an allocation's stats and checks from its agent", async () => {
    const { s, agent, alloc } = await withAgent(agentCalls);
    const stats = await s.call(`/v1/client/allocation/${alloc.ID}/stats?task=web`);
    expect(stats.status).toBe(200);
    expect(await stats.json()).toEqual(usage);
    expect(callsOf(agent, "Allocations.Stats")[0]).toMatchObject({ AllocID: alloc.ID, Task: "web" });
    const checks = await s.call(`/v1/client/allocation/${alloc.ID}/checks`);
    expect([checks.status, await checks.text()]).toEqual([200, "null"]);
  });

  it("restarts and signals with the body's fields only, answering Nomad's GenericResponse", async () => {
    const { s, agent, alloc } = await withAgent(agentCalls);
    const restart = await s.call(`/v1/client/allocation/${alloc.ID}/restart`, {
      method: "PUT",
      body: JSON.stringify({ TaskName: "web", AllTasks: false, AllocID: "other" }),
    });
    expect([restart.status, await restart.json()]).toEqual([200, { Index: 0 }]);
    expect(callsOf(agent, "Allocations.Restart")[0]).toMatchObject({ AllocID: alloc.ID, TaskName: "web" });
    const empty = await s.call(`/v1/client/allocation/${alloc.ID}/restart`, { method: "POST" });
    expect(empty.status).toBe(200);

    const failed = await s.call(`/v1/client/allocation/${alloc.ID}/restart`, {
      method: "PUT",
      body: JSON.stringify({ TaskName: "zz" }),
    });
    expect([failed.status, await failed.text()]).toEqual([500, "Could not find task runner for task: zz"]);

    const signal = await s.call(`/v1/client/allocation/${alloc.ID}/signal`, {
      method: "POST",
      body: JSON.stringify({ Task: "web", Signal: "SIGHUP" }),
    });
    expect([signal.status, await signal.json()]).toEqual([200, { Index: 0 }]);
    expect(callsOf(agent, "Allocations.Signal")[0]).toMatchObject({
      AllocID: alloc.ID,
      Task: "web",
      Signal: "SIGHUP",
    });
    const noBody = await s.call(`/v1/client/allocation/${alloc.ID}/signal`, { method: "PUT" });
    expect([noBody.status, await noBody.text()]).toEqual([
      400,
      "Failed to decode body: Request body is empty",
    ]);
    const get = await s.call(`/v1/client/allocation/${alloc.ID}/signal`);
    expect([get.status, await get.text()]).toEqual([405, "Invalid method"]);
  });

  it("collects an allocation, and answers the agent's refusal as Nomad's 500", async () => {
    const { s, alloc } = await withAgent(agentCalls);
    const gc = await s.call(`/v1/client/allocation/${alloc.ID}/gc`);
    expect([gc.status, await gc.text()]).toEqual([
      500,
      "No such allocation on client, or allocation not eligible for GC",
    ]);
    const id = randomUUID();
    const unknown = await s.call(`/v1/client/allocation/${id}/gc`);
    expect([unknown.status, await unknown.text()]).toEqual([404, `Unknown allocation "${id}"`]);
  });
});

describe("/v1/client/gc, /v1/client/stats, /v1/client/metadata", () => {
  it("calls the node named by node_id; without one, Nomad's 400; an unknown one, Nomad's status per route", async () => {
    const { s, agent } = await withAgent(agentCalls);
    const gc = await s.call(`/v1/client/gc?node_id=${agent.id}`);
    expect([gc.status, await gc.text()]).toEqual([200, ""]);
    expect(callsOf(agent, "Allocations.GarbageCollectAll")[0]).toMatchObject({ NodeID: agent.id });

    const stats = await s.call(`/v1/client/stats?node_id=${agent.id}`);
    expect(await stats.json()).toEqual({ Uptime: 605, CPUTicksConsumed: 22.99, Memory: { Total: 1024 } });

    for (const path of ["/v1/client/gc", "/v1/client/stats", "/v1/client/metadata"]) {
      const res = await s.call(path);
      expect([path, res.status, await res.text()]).toEqual([
        path,
        400,
        "No local Node and node_id not provided",
      ]);
    }
    const id = randomUUID();
    const unknownStats = await s.call(`/v1/client/stats?node_id=${id}`);
    expect([unknownStats.status, await unknownStats.text()]).toEqual([404, `Unknown node ${id}`]);
    const unknownMeta = await s.call(`/v1/client/metadata?node_id=${id}`);
    // Nomad's 500 here; a node_id nobody has is the caller's mistake (README).
    expect([unknownMeta.status, await unknownMeta.text()]).toEqual([404, `Unknown node ${id}`]);
  });

  it("reads and applies node metadata; a null value unsets; the agent's coded error keeps its status", async () => {
    const { s, agent } = await withAgent(agentCalls);
    const read = await s.call(`/v1/client/metadata?node_id=${agent.id}`);
    expect(await read.json()).toEqual({ Meta: { a: "1" }, Dynamic: {}, Static: { a: "1" } });

    const apply = await s.call(`/v1/client/metadata?node_id=${agent.id}`, {
      method: "POST",
      body: JSON.stringify({ Meta: { foo: "bar", gone: null } }),
    });
    expect([apply.status, await apply.json()]).toEqual([
      200,
      { Meta: { a: "1", foo: "bar" }, Dynamic: { foo: "bar", gone: null }, Static: { a: "1" } },
    ]);
    expect(callsOf(agent, "NodeMeta.Apply")[0]).toMatchObject({
      NodeID: agent.id,
      Meta: { foo: "bar", gone: null },
    });

    // The node may come in the body.
    const bodyNode = await s.call("/v1/client/metadata", {
      method: "POST",
      body: JSON.stringify({ NodeID: agent.id, Meta: { "": "x" } }),
    });
    expect([bodyNode.status, await bodyNode.text()]).toEqual([400, "metadata keys must not be empty"]);
    const put = await s.call(`/v1/client/metadata?node_id=${agent.id}`, { method: "PUT", body: "{}" });
    expect([put.status, await put.text()]).toEqual([405, "Invalid method"]);
  });

  it("needs node read or write under ACLs, and passes the caller's token on to the agent", async () => {
    const acl = await startAclServer();
    running.push(acl.s);
    const { agent } = await agentWithAlloc(acl.s, agentCalls);
    agents.push(agent);
    await acl.policy("node-read", `node { policy = "read" }`);
    const reader = await acl.token(["node-read"]);
    const stats = await acl.call(reader.SecretID, `/v1/client/stats?node_id=${agent.id}`);
    expect(stats.status).toBe(200);
    expect(callsOf(agent, "ClientStats.Stats")[0]).toMatchObject({ AuthToken: reader.SecretID });
    const gc = await acl.call(reader.SecretID, `/v1/client/gc?node_id=${agent.id}`);
    expect([gc.status, await gc.text()]).toEqual([403, "Permission denied"]);
    const apply = await acl.call(reader.SecretID, `/v1/client/metadata?node_id=${agent.id}`, "POST", {
      Meta: {},
    });
    expect(apply.status).toBe(403);
  });
});
