import { describe, expect, it } from "vitest";
import {
  type NetworkResource,
  nodeNetworks,
  PortSet,
  parsePortRanges,
} from "../../../projections/networks.ts";
import { AllocMetric } from "../../../src/services/scheduler/metrics.ts";
import {
  assignPorts,
  assignTaskNetwork,
  NetworkIndex,
} from "../../../src/services/scheduler/network-index.ts";
import { Plan } from "../../../src/services/scheduler/plan.ts";
import { seededRandom } from "../../../src/services/scheduler/rng.ts";
import type { TaskGroupSpec } from "../../../streams/jobs.ts";
import { memoryStore, nodeSpec } from "../../projections/memory-store.ts";
import { networkedNode } from "./ports-fixtures.ts";

function node(options: Parameters<typeof networkedNode>[0] = {}) {
  const body = networkedNode(options);
  return nodeSpec("n1", {
    NodeResources: body.NodeResources,
    ReservedResources: body.ReservedResources,
  });
}

const port = (Label: string, Value = 0, To = 0, HostNetwork = "default") => ({
  Label,
  Value,
  To,
  HostNetwork,
});

/** The offer, failing the test with the reason when there is none. */
function given<T>(x: T | string): T {
  if (typeof x === "string") throw new Error(x);
  return x;
}

function ask(reserved: ReturnType<typeof port>[], dynamic: ReturnType<typeof port>[] = []): NetworkResource {
  return {
    Mode: "host",
    Device: "",
    CIDR: "",
    IP: "",
    Hostname: "",
    MBits: 0,
    DNS: null,
    ReservedPorts: reserved.length > 0 ? reserved : null,
    DynamicPorts: dynamic.length > 0 ? dynamic : null,
  };
}

describe("the node's networks (Nomad's NetworkIndex.SetNode)", () => {
  it("reads addresses per alias, reserved host ports on every address, and the dynamic range", () => {
    const n = nodeNetworks(node({ min: 21_000, max: 22_000, reserved: "22,80-82" }));
    const ip = n.hostIP;
    expect(n.hostNetworks.get("default")).toEqual([ip]);
    expect([...(n.reserved.get(ip) ?? [])].sort((a, b) => a - b)).toEqual([22, 80, 81, 82]);
    expect([n.minDynamicPort, n.maxDynamicPort]).toEqual([21_000, 22_000]);
    expect(n.modes).toEqual(new Set(["host", "bridge"]));
  });

  it("a node from before NodeNetworks gets its Networks as the `default` host network, and Nomad's default range", () => {
    const n = nodeNetworks(
      nodeSpec("old", {
        NodeResources: { Networks: [{ Device: "eth0", IP: "10.9.9.9", CIDR: "10.9.9.9/32", MBits: 100 }] },
      }),
    );
    expect(n.hostNetworks.get("default")).toEqual(["10.9.9.9"]);
    expect([n.minDynamicPort, n.maxDynamicPort]).toEqual([20_000, 32_000]);
  });

  it("reserved ports it cannot read make the node invalid", () => {
    expect(nodeNetworks(node({ reserved: "80-70" })).error).toMatch(/error parsing reserved_ports/);
    expect(parsePortRanges("1,3-5, 9")).toEqual([1, 3, 4, 5, 9]);
    expect(typeof parsePortRanges("70000")).toBe("string");
  });
});

describe("assigning ports (Nomad's AssignPorts)", () => {
  it("gives static ports on the host network's address and refuses a used one with Nomad's reason", () => {
    const ports = new PortSet(nodeNetworks(node({ reserved: "22" })));
    const ip = ports.node.hostIP;
    expect(assignPorts(ports, ask([port("http", 8080, 80)]), Math.random)).toEqual([
      { Label: "http", Value: 8080, To: 80, HostIP: ip },
    ]);
    ports.add(ip, 8080);
    expect(assignPorts(ports, ask([port("http", 8080)]), Math.random)).toBe(
      "reserved port collision http=8080",
    );
    expect(assignPorts(ports, ask([port("ssh", 22)]), Math.random)).toBe("reserved port collision ssh=22");
    expect(assignPorts(ports, ask([port("x", 70_000)]), Math.random)).toBe(
      "invalid port 70000 (out of range)",
    );
    expect(assignPorts(ports, ask([port("x", 80, 0, "public")]), Math.random)).toBe(
      "no addresses available for public network",
    );
  });

  it("picks dynamic ports in the node's range, none used, none twice in one offer, To -1 mapped to the value", () => {
    const ports = new PortSet(nodeNetworks(node({ min: 40_000, max: 40_009 })));
    const ip = ports.node.hostIP;
    for (const p of [40_000, 40_002, 40_004]) ports.add(ip, p);
    const random = seededRandom("dyn");
    const offer = given(
      assignPorts(ports, ask([port("s", 40_001)], [port("a", 0, -1), port("b", 0, 9000)]), random),
    );
    const a = offer.find((p) => p.Label === "a")!;
    const b = offer.find((p) => p.Label === "b")!;
    for (const p of [a, b]) {
      expect(p.Value).toBeGreaterThanOrEqual(40_000);
      expect(p.Value).toBeLessThanOrEqual(40_009);
      expect([40_000, 40_001, 40_002, 40_004]).not.toContain(p.Value);
    }
    expect(a.Value).not.toBe(b.Value);
    expect(a.To).toBe(a.Value);
    expect(b.To).toBe(9000);
  });

  it("falls back to the precise scan when random picks miss, and fails when the range is exhausted", () => {
    const ports = new PortSet(nodeNetworks(node({ min: 50_000, max: 50_999 })));
    const ip = ports.node.hostIP;
    for (let p = 50_000; p <= 50_999; p++) if (p !== 50_777) ports.add(ip, p);
    expect(given(assignPorts(ports, ask([], [port("a")]), seededRandom("scan")))[0]?.Value).toBe(50_777);
    ports.add(ip, 50_777);
    expect(assignPorts(ports, ask([], [port("a")]), seededRandom("scan"))).toBe(
      "dynamic port selection failed",
    );
  });

  it("the same seed gives the same ports", () => {
    const nets = nodeNetworks(node());
    const pick = () =>
      assignPorts(new PortSet(nets), ask([], [port("a"), port("b")]), seededRandom("eval-1/0"));
    expect(pick()).toEqual(pick());
  });

  it("a task's legacy network gets the node's device and address, its bandwidth checked", () => {
    const ports = new PortSet(nodeNetworks(node({ min: 33_000, max: 33_010 })));
    const n = given(
      assignTaskNetwork(
        ports,
        { ...ask([port("admin", 9090)], [port("rpc", 0, -1)]), MBits: 600 },
        seededRandom("t"),
      ),
    );
    expect(n.Device).toBe("eth0");
    expect(n.IP).toBe(ports.node.hostIP);
    expect(n.DynamicPorts?.[0]?.Value).toBeGreaterThanOrEqual(33_000);
    ports.bandwidth.set("eth0", 600);
    expect(assignTaskNetwork(ports, { ...ask([]), MBits: 600 }, Math.random)).toBe("bandwidth exceeded");
  });
});

describe("the evaluation's index over the plan (NetworkIndex.offer)", () => {
  it("counts the plan's placements and stops, and records Nomad's dimensions", async () => {
    const { tables } = await memoryStore();
    const n = { ...node(), Status: "ready" } as unknown as Parameters<NetworkIndex["offer"]>[0];
    const plan = new Plan("e1", undefined, tables.allocs, 0);
    const index = new NetworkIndex(plan, seededRandom("e1"));
    const tg = {
      Name: "web",
      Count: 1,
      Networks: [ask([port("http", 8080)])],
      Tasks: [{ Name: "t", Driver: "docker", Resources: { CPU: 100, MemoryMB: 64, Networks: null } }],
    } as unknown as TaskGroupSpec;
    expect(index.asksFor(tg)).toBe(true);
    const use = plan.proposed(n.ID);
    const m1 = new AllocMetric();
    const offer = index.offer(n, use, tg, m1);
    expect(offer?.Ports?.[0]?.Value).toBe(8080);
    // The option is not taken until the plan places it.
    expect(index.offer(n, use, tg, new AllocMetric())?.Ports?.[0]?.Value).toBe(8080);
    plan.appendPlacement({ ID: "a1", Name: "j.web[0]", TaskGroup: "web", NodeID: n.ID, ...offer, tg });
    const m2 = new AllocMetric();
    expect(index.offer(n, use, tg, m2)).toBeUndefined();
    expect(m2.DimensionExhausted).toEqual({ "network: reserved port collision http=8080": 1 });
    const bridge = {
      ...tg,
      Networks: [{ ...ask([], [port("a")]), Mode: "cni/x" }],
    } as unknown as TaskGroupSpec;
    const m3 = new AllocMetric();
    expect(index.offer(n, use, bridge, m3)).toBeUndefined();
    expect(m3.ConstraintFiltered).toEqual({ "missing network": 1 });
  });
});
