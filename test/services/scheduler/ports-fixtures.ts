import type { AllocRow } from "../../../projections/allocs.ts";
import { allocNetworkUse } from "../../../projections/networks.ts";
import { isTerminalAlloc } from "../../../streams/allocs.ts";

let nextIP = 1;

/** A node fingerprint with one host network (and a bridge), its dynamic port range and its reserved host ports. */
export function networkedNode(
  options: { min?: number; max?: number; reserved?: string; cpu?: number; memoryMB?: number } = {},
) {
  const ip = `10.1.0.${nextIP++}`;
  return {
    NodeResources: {
      Cpu: { CpuShares: options.cpu ?? 4000 },
      Memory: { MemoryMB: options.memoryMB ?? 8192 },
      Disk: { DiskMB: 100_000 },
      Networks: [{ Mode: "host", Device: "eth0", CIDR: `${ip}/32`, IP: ip, MBits: 1000 }, { Mode: "bridge" }],
      NodeNetworks: [
        {
          Mode: "host",
          Device: "eth0",
          Speed: 1000,
          Addresses: [{ Family: "ipv4", Alias: "default", Address: ip, ReservedPorts: "", Gateway: "" }],
        },
        { Mode: "bridge", Device: "", Speed: 0, Addresses: null },
      ],
      MinDynamicPort: options.min ?? 20_000,
      MaxDynamicPort: options.max ?? 32_000,
    },
    ReservedResources: {
      Cpu: { CpuShares: 0 },
      Memory: { MemoryMB: 0 },
      Disk: { DiskMB: 0 },
      Networks: { ReservedHostPorts: options.reserved ?? "" },
    },
  };
}

/** A service job whose group asks for a network: static ports `{label: value}` and dynamic port labels. */
export function portsJob(
  id: string,
  count: number,
  network: { static?: Record<string, number>; dynamic?: string[]; mode?: string },
  extra: Record<string, unknown> = {},
) {
  return {
    ID: id,
    Type: "service",
    Datacenters: ["dc1"],
    Update: { MaxParallel: 0 },
    TaskGroups: [
      {
        Name: "web",
        Count: count,
        EphemeralDisk: { SizeMB: 10 },
        Networks: [
          {
            Mode: network.mode ?? "host",
            ReservedPorts: Object.entries(network.static ?? {}).map(([Label, Value]) => ({ Label, Value })),
            DynamicPorts: (network.dynamic ?? []).map((Label) => ({ Label, To: -1 })),
          },
        ],
        Tasks: [
          {
            Name: "server",
            Driver: "docker",
            Config: { image: id },
            Resources: { CPU: 100, MemoryMB: 64 },
            LogConfig: { MaxFiles: 1, MaxFileSizeMB: 1 },
          },
        ],
      },
    ],
    ...extra,
  };
}

/** Ports held twice on one node among its live allocations: `node ip:port a b` entries. */
export function portsHeldTwice(allocsOn: readonly AllocRow[]): string[] {
  const holder = new Map<string, string>();
  const twice: string[] = [];
  for (const a of allocsOn) {
    if (isTerminalAlloc(a)) continue;
    for (const p of allocNetworkUse(a).ports) {
      const key = `${p.ip}:${p.port}`;
      const other = holder.get(key);
      if (other !== undefined && other !== a.ID) twice.push(`${a.NodeID} ${key} ${other} ${a.ID}`);
      else holder.set(key, a.ID);
    }
  }
  return twice;
}
