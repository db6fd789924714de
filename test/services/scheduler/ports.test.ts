import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import { nodeNetworks } from "../../../projections/networks.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { networkedNode, portsHeldTwice, portsJob } from "./ports-fixtures.ts";
import { Scenario } from "./scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

async function start(): Promise<Scenario> {
  const s = await Scenario.start();
  scenarios.push(s);
  return s;
}

interface Shared {
  Ports: { Label: string; Value: number; To: number; HostIP: string }[] | null;
  Networks:
    | {
        Mode: string;
        IP: string;
        ReservedPorts: { Label: string; Value: number }[] | null;
        DynamicPorts: { Label: string; Value: number; To: number }[] | null;
      }[]
    | null;
}
const shared = (a: AllocRow) => (a.AllocatedResources as { Shared: Shared }).Shared;

function blockedMetric(s: Scenario, jobID: string) {
  const blocked = s.evals(jobID).find((e) => e.Status === "blocked");
  const failed = s
    .evals(jobID)
    .find((e) => e.FailedTGAllocs !== null && Object.keys(e.FailedTGAllocs ?? {}).length > 0);
  return { blocked, metric: (failed?.FailedTGAllocs as Record<string, Record<string, unknown>> | null)?.web };
}

describe("group networks: static and dynamic ports", () => {
  it("gives an allocation its static port and a dynamic port from the node's range, on the node's address", async () => {
    const s = await start();
    const node = await s.addNode(networkedNode({ min: 25_000, max: 25_100 }));
    await s.register(portsJob("web", 1, { static: { http: 8080 }, dynamic: ["metrics"] }));
    await s.idle();
    const [a] = s.live("web");
    expect(a?.NodeID).toBe(node.id);
    const { Ports, Networks } = shared(a!);
    const ip = networkedNodeIP(s, node.id);
    expect(Ports?.[0]).toEqual({ Label: "http", Value: 8080, To: 0, HostIP: ip });
    const dyn = Ports?.[1];
    expect(dyn?.Label).toBe("metrics");
    expect(dyn?.Value).toBeGreaterThanOrEqual(25_000);
    expect(dyn?.Value).toBeLessThanOrEqual(25_100);
    expect(dyn?.To).toBe(dyn?.Value);
    expect(Networks).toHaveLength(1);
    expect(Networks?.[0]?.Mode).toBe("host");
    expect(Networks?.[0]?.IP).toBe(ip);
    expect(Networks?.[0]?.ReservedPorts?.[0]?.Value).toBe(8080);
    expect(Networks?.[0]?.DynamicPorts?.[0]?.Value).toBe(dyn?.Value);
    // The API shows them as Nomad does, and the legacy totals carry the network.
    const res = await s.call(`/v1/allocation/${a!.ID}`);
    const body = res.body as { AllocatedResources: { Shared: Shared }; Resources: { Networks: unknown[] } };
    expect(body.AllocatedResources.Shared.Ports).toEqual(Ports);
    expect(body.Resources.Networks).toHaveLength(1);
    // Node.Register kept the fingerprint the ports came from.
    const shown = (await s.call(`/v1/node/${node.id}`)).body as {
      NodeResources: { NodeNetworks: unknown[]; MinDynamicPort: number; MaxDynamicPort: number };
      ReservedResources: { Networks: { ReservedHostPorts: string } };
    };
    expect(shown.NodeResources.NodeNetworks).toHaveLength(2);
    expect([shown.NodeResources.MinDynamicPort, shown.NodeResources.MaxDynamicPort]).toEqual([
      25_000, 25_100,
    ]);
    expect(shown.ReservedResources.Networks.ReservedHostPorts).toBe("");
  });

  it("a static port taken on the only node blocks the second allocation, with Nomad's dimension", async () => {
    const s = await start();
    await s.addNode(networkedNode());
    await s.register(portsJob("web", 2, { static: { http: 8080 } }));
    await s.idle();
    expect(s.live("web")).toHaveLength(1);
    const { blocked, metric } = blockedMetric(s, "web");
    expect(blocked).toBeDefined();
    expect(metric?.DimensionExhausted).toEqual({ "network: reserved port collision http=8080": 1 });
    expect(metric?.NodesExhausted).toBe(1);
  });

  it("a port the node reserves is never given", async () => {
    const s = await start();
    await s.addNode(networkedNode({ reserved: "22,8000-8100" }));
    await s.register(portsJob("ssh", 1, { static: { ssh: 22 } }));
    await s.register(portsJob("api", 1, { static: { api: 8050 } }));
    await s.idle();
    expect(s.live("ssh")).toHaveLength(0);
    expect(blockedMetric(s, "ssh").metric?.DimensionExhausted).toEqual({
      "network: reserved port collision ssh=22": 1,
    });
    expect(blockedMetric(s, "api").metric?.DimensionExhausted).toEqual({
      "network: reserved port collision api=8050": 1,
    });
  });

  it("dynamic ports come from the node's range, never twice, until the range is exhausted", async () => {
    const s = await start();
    await s.addNode(networkedNode({ min: 30_000, max: 30_004, reserved: "30002" }));
    await s.register(portsJob("dyn", 5, { dynamic: ["a"] }));
    await s.idle();
    const live = s.live("dyn");
    // 30000..30004 less the reserved 30002: four ports.
    expect(live).toHaveLength(4);
    const values = live.map((a) => shared(a).Ports?.[0]?.Value).sort();
    expect(values).toEqual([30_000, 30_001, 30_003, 30_004]);
    expect(blockedMetric(s, "dyn").metric?.DimensionExhausted).toEqual({
      "network: dynamic port selection failed": 1,
    });
  });

  it("a port is free again once its allocation is terminal", async () => {
    const s = await start();
    await s.addNode(networkedNode());
    // "one" is placed before "two" is registered: with several scheduler workers the two
    // evaluations would otherwise race for 8080, and either could win, as in Nomad.
    await s.register(portsJob("one", 1, { static: { http: 8080 } }));
    await s.idle();
    await s.register(portsJob("two", 1, { static: { http: 8080 } }));
    await s.idle();
    expect(s.live("one")).toHaveLength(1);
    expect(s.live("two")).toHaveLength(0);
    const stop = await s.call("/v1/job/one", "DELETE");
    expect(stop.status, stop.text).toBe(200);
    await s.idle();
    // The stop releases the blocked evaluation of "two", which now gets 8080.
    expect(s.live("two")).toHaveLength(1);
    expect(shared(s.live("two")[0]!).Ports?.[0]?.Value).toBe(8080);
    expect(portsHeldTwice([...s.server.store.table<AllocRow>("allocs").all()])).toEqual([]);
  });

  it("a node without the group's network mode is filtered as Nomad's NetworkChecker does", async () => {
    const s = await start();
    await s.addNode(networkedNode());
    await s.register(portsJob("cni", 1, { dynamic: ["a"], mode: "cni/mynet" }));
    await s.idle();
    const { metric } = blockedMetric(s, "cni");
    expect(metric?.ConstraintFiltered).toEqual({ "missing network": 1 });
  });

  it("an in-place update keeps the allocation's ports", async () => {
    const s = await start();
    await s.addNode(networkedNode());
    await s.register(portsJob("web", 1, { static: { http: 8080 }, dynamic: ["m"] }));
    await s.idle();
    const before = s.live("web")[0]!;
    // A new version whose groups did not change: the allocation is updated in place.
    await s.register(portsJob("web", 1, { static: { http: 8080 }, dynamic: ["m"] }, { Priority: 60 }));
    await s.idle();
    const after = s.live("web")[0]!;
    expect(after.ID).toBe(before.ID);
    expect(after.Job?.Priority).toBe(60);
    expect(shared(after).Ports).toEqual(shared(before).Ports);
  });

  it("a task's legacy resources.network gets the node's device and address, and its static port once per node", async () => {
    const s = await start();
    const node = await s.addNode(networkedNode({ min: 26_000, max: 26_050 }));
    const job = serviceJobWithTaskNetwork("legacy", 2);
    await s.register(job);
    await s.idle();
    const [a] = s.live("legacy");
    expect(s.live("legacy")).toHaveLength(1);
    const tasks = (
      a!.AllocatedResources as { Tasks: Record<string, { Networks: Record<string, unknown>[] }> }
    ).Tasks;
    const n = tasks.server!.Networks[0]!;
    expect(n.Device).toBe("eth0");
    expect(n.IP).toBe(networkedNodeIP(s, node.id));
    expect(n.MBits).toBe(10);
    expect((n.ReservedPorts as { Value: number }[])[0]?.Value).toBe(9090);
    const dyn = (n.DynamicPorts as { Value: number }[])[0]!.Value;
    expect(dyn).toBeGreaterThanOrEqual(26_000);
    expect(dyn).toBeLessThanOrEqual(26_050);
    expect((a!.TaskResources as Record<string, { Networks: unknown[] }>).server?.Networks).toEqual([n]);
    expect(blockedMetric(s, "legacy").metric?.DimensionExhausted).toEqual({
      "network: reserved port collision admin=9090": 1,
    });
  });
});

function networkedNodeIP(s: Scenario, nodeID: string): string {
  const node = s.server.store.table<NodeRow>("nodes").get(nodeID);
  return nodeNetworks(node!).hostIP;
}

function serviceJobWithTaskNetwork(id: string, count: number) {
  const job = portsJob(id, count, {});
  const [group] = job.TaskGroups;
  const task = group!.Tasks[0]!;
  return {
    ...job,
    TaskGroups: [
      {
        ...group,
        Networks: null,
        Tasks: [
          {
            ...task,
            Resources: {
              ...task.Resources,
              Networks: [
                {
                  MBits: 10,
                  ReservedPorts: [{ Label: "admin", Value: 9090 }],
                  DynamicPorts: [{ Label: "rpc" }],
                },
              ],
            },
          },
        ],
      },
    ],
  };
}
