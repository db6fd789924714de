import type { NodeSpec } from "../../streams/nodes.ts";

type Json = Readonly<Record<string, unknown>>;

/**
 * Nomad's legacy Resources struct (COMPAT 0.10) with every field present, as
 * Go encodes it: clients of every version still read it (`nomad node status`
 * dereferences CPU, MemoryMB and DiskMB of a node's Resources and Reserved,
 * and of each allocation's Resources, without a nil check).
 */
export interface LegacyResources {
  readonly CPU: number;
  readonly Cores: number;
  readonly MemoryMB: number;
  readonly MemoryMaxMB: number;
  readonly DiskMB: number;
  readonly IOPS: number;
  readonly Networks: readonly unknown[] | null;
  readonly Devices: readonly unknown[] | null;
}

const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined;
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const list = (v: unknown): readonly unknown[] | undefined => (Array.isArray(v) ? v : undefined);

/**
 * A node's legacy Resources: what the client sent, completed from its
 * NodeResources (Nomad's clients fingerprint both; newer ones may send only
 * NodeResources, older API users only Resources).
 */
export function legacyNodeResources(node: Pick<NodeSpec, "Resources" | "NodeResources">): LegacyResources {
  const res = obj(node.NodeResources);
  return complete(obj(node.Resources), {
    CPU: num(obj(res?.Cpu)?.CpuShares),
    MemoryMB: num(obj(res?.Memory)?.MemoryMB),
    DiskMB: num(obj(res?.Disk)?.DiskMB),
    Networks: list(res?.Networks),
  });
}

/** A node's legacy Reserved, completed from its ReservedResources. */
export function legacyNodeReserved(node: Pick<NodeSpec, "Reserved" | "ReservedResources">): LegacyResources {
  const res = obj(node.ReservedResources);
  return complete(obj(node.Reserved), {
    CPU: num(obj(res?.Cpu)?.CpuShares),
    MemoryMB: num(obj(res?.Memory)?.MemoryMB),
    DiskMB: num(obj(res?.Disk)?.DiskMB),
    Networks: undefined,
  });
}

interface Derived {
  readonly CPU: number | undefined;
  readonly MemoryMB: number | undefined;
  readonly DiskMB: number | undefined;
  readonly Networks: readonly unknown[] | undefined;
}

function complete(given: Json | undefined, derived: Derived): LegacyResources {
  return {
    CPU: num(given?.CPU) ?? derived.CPU ?? 0,
    Cores: num(given?.Cores) ?? 0,
    MemoryMB: num(given?.MemoryMB) ?? derived.MemoryMB ?? 0,
    MemoryMaxMB: num(given?.MemoryMaxMB) ?? 0,
    DiskMB: num(given?.DiskMB) ?? derived.DiskMB ?? 0,
    IOPS: num(given?.IOPS) ?? 0,
    Networks: list(given?.Networks) ?? derived.Networks ?? null,
    Devices: list(given?.Devices) ?? null,
  };
}
