import type { AllocationSpec } from "../streams/allocs.ts";
import type { TaskGroupSpec } from "../streams/jobs.ts";
import type { NodeSpec } from "../streams/nodes.ts";

/**
 * Resource arithmetic shared by the scheduler (bin-packing) and the plan
 * apply (the second check that a node still fits): both must count alike,
 * or the apply would refuse what the scheduler thought fits. Pure.
 */
export interface Usage {
  /** MHz (Nomad's CpuShares). */
  cpu: number;
  memoryMB: number;
  diskMB: number;
}

export interface Capacity {
  readonly cpu: number;
  readonly memoryMB: number;
  /** Infinity when the node did not fingerprint its disk (nothing to check it against). */
  readonly diskMB: number;
}

export type Dimension = "cpu" | "memory" | "disk";

type Json = Readonly<Record<string, unknown>>;

const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined;

/** A capacity and the objects besides its key (NodeResources, or the row) it was computed from. */
interface KeptCapacity {
  readonly legacy: unknown;
  readonly reserved: unknown;
  readonly legacyReserved: unknown;
  readonly capacity: Capacity;
}

const capacities = new WeakMap<object, KeptCapacity>();

/**
 * What a node offers to allocations: its fingerprinted resources (Nomad's
 * NodeResources, or the legacy Resources) minus what it reserves.
 *
 * Kept by the node's NodeResources object (by the row when it has none),
 * with the other objects it was computed from: a node's row is replaced
 * at every client update of its allocations (LastAllocUpdateIndex), but the
 * new row shares its resource objects, so the scheduler's next pass finds
 * the capacity kept instead of computing and filing it again for each node
 * it visits.
 */
export function nodeCapacity(
  node: Pick<NodeSpec, "NodeResources" | "ReservedResources" | "Resources" | "Reserved">,
): Capacity {
  const key: object = obj(node.NodeResources) ?? node;
  const kept = capacities.get(key);
  if (
    kept &&
    kept.reserved === node.ReservedResources &&
    kept.legacyReserved === node.Reserved &&
    kept.legacy === node.Resources
  )
    return kept.capacity;
  const capacity = computeCapacity(node);
  capacities.set(key, {
    legacy: node.Resources,
    reserved: node.ReservedResources,
    legacyReserved: node.Reserved,
    capacity,
  });
  return capacity;
}

function computeCapacity(
  node: Pick<NodeSpec, "NodeResources" | "ReservedResources" | "Resources" | "Reserved">,
): Capacity {
  const res = obj(node.NodeResources);
  const legacy = obj(node.Resources);
  const reserved = obj(node.ReservedResources);
  const legacyReserved = obj(node.Reserved);
  const cpu = res ? num(obj(res.Cpu)?.CpuShares) : num(legacy?.CPU);
  const memory = res ? num(obj(res.Memory)?.MemoryMB) : num(legacy?.MemoryMB);
  const diskObj = res ? obj(res.Disk) : undefined;
  const disk = diskObj
    ? num(diskObj.DiskMB)
    : legacy && typeof legacy.DiskMB === "number"
      ? legacy.DiskMB
      : undefined;
  const rCpu = reserved ? num(obj(reserved.Cpu)?.CpuShares) : num(legacyReserved?.CPU);
  const rMem = reserved ? num(obj(reserved.Memory)?.MemoryMB) : num(legacyReserved?.MemoryMB);
  const rDisk = reserved ? num(obj(reserved.Disk)?.DiskMB) : num(legacyReserved?.DiskMB);
  const capacity: Capacity = {
    cpu: cpu - rCpu,
    memoryMB: memory - rMem,
    diskMB: disk === undefined ? Number.POSITIVE_INFINITY : disk - rDisk,
  };
  return capacity;
}

/** The AllocatedResources (and legacy fields) Nomad stamps on an allocation of a group. */
export interface GroupAllocation {
  readonly AllocatedResources: Json;
  readonly TaskResources: Json;
  readonly SharedResources: Json;
  /** The legacy total: TaskResources and SharedResources summed as Nomad's state store does (COMPAT 0.11). */
  readonly Resources: Json;
  readonly usage: Readonly<Usage>;
}

const groupAllocations = new WeakMap<TaskGroupSpec, GroupAllocation>();
const groupUsages = new WeakMap<TaskGroupSpec, Readonly<Usage>>();

/**
 * What one allocation of `tg` takes on its node: groupAllocation's `usage`
 * (the same object), without the AllocatedResources and legacy fields only a
 * placed allocation carries. The scheduler ranks and sums with it; a pass
 * that places nothing (no node fits, or none at all) needs nothing more, and
 * building the whole object was an eighth of such a pass's CPU.
 */
export function groupUsage(tg: TaskGroupSpec): Readonly<Usage> {
  const cached = groupUsages.get(tg);
  if (cached) return cached;
  const usage: Usage = { cpu: 0, memoryMB: 0, diskMB: num(tg.EphemeralDisk?.SizeMB) };
  for (const task of tg.Tasks ?? []) {
    usage.cpu += num(task.Resources?.CPU);
    usage.memoryMB += num(task.Resources?.MemoryMB);
  }
  groupUsages.set(tg, usage);
  return usage;
}

/**
 * The resources one allocation of `tg` takes: the sum of its tasks' CPU and
 * memory, and its ephemeral disk. One object per task group version, shared
 * by every allocation placed from it (rows are immutable).
 */
export function groupAllocation(tg: TaskGroupSpec): GroupAllocation {
  const cached = groupAllocations.get(tg);
  if (cached) return cached;
  const tasks: Record<string, Json> = {};
  const lifecycles: Record<string, Json | null> = {};
  const legacy: Record<string, Json> = {};
  const usage = groupUsage(tg);
  // Nomad's Resources.Add: MemoryMaxMB adds a task's max, or its MemoryMB when it has none.
  let memoryMax = 0;
  for (const task of tg.Tasks ?? []) {
    const r = task.Resources;
    const cpu = num(r?.CPU);
    const memory = num(r?.MemoryMB);
    tasks[task.Name] = {
      Cpu: { CpuShares: cpu, ReservedCores: null },
      Memory: { MemoryMB: memory, MemoryMaxMB: num(r?.MemoryMaxMB) },
      Networks: null,
      Devices: null,
    };
    memoryMax += num(r?.MemoryMaxMB) > 0 ? num(r?.MemoryMaxMB) : memory;
    lifecycles[task.Name] = task.Lifecycle ?? null;
    legacy[task.Name] = { CPU: cpu, Cores: 0, MemoryMB: memory, MemoryMaxMB: num(r?.MemoryMaxMB), DiskMB: 0 };
  }
  const result: GroupAllocation = {
    AllocatedResources: {
      Tasks: tasks,
      TaskLifecycles: lifecycles,
      Shared: { DiskMB: usage.diskMB, Networks: null, Ports: null },
    },
    TaskResources: legacy,
    SharedResources: { DiskMB: usage.diskMB },
    Resources: {
      CPU: usage.cpu,
      Cores: 0,
      MemoryMB: usage.memoryMB,
      MemoryMaxMB: memoryMax,
      DiskMB: usage.diskMB,
      IOPS: 0,
      Networks: null,
      Devices: null,
    },
    usage,
  };
  groupAllocations.set(tg, result);
  return result;
}

const allocUsages = new WeakMap<object, Readonly<Usage>>();
const NOTHING: Readonly<Usage> = { cpu: 0, memoryMB: 0, diskMB: 0 };

/** What an allocation takes on its node, read from its AllocatedResources (or legacy Resources). */
export function allocUsage(a: Pick<AllocationSpec, "AllocatedResources" | "Resources">): Readonly<Usage> {
  const allocated = obj(a.AllocatedResources);
  if (allocated) {
    const cached = allocUsages.get(allocated);
    if (cached) return cached;
    const usage: Usage = { cpu: 0, memoryMB: 0, diskMB: num(obj(allocated.Shared)?.DiskMB) };
    for (const task of Object.values(obj(allocated.Tasks) ?? {})) {
      const t = obj(task);
      usage.cpu += num(obj(t?.Cpu)?.CpuShares);
      usage.memoryMB += num(obj(t?.Memory)?.MemoryMB);
    }
    allocUsages.set(allocated, usage);
    return usage;
  }
  const legacy = obj(a.Resources);
  if (!legacy) return NOTHING;
  return { cpu: num(legacy.CPU), memoryMB: num(legacy.MemoryMB), diskMB: num(legacy.DiskMB) };
}

export function addUsage(into: Usage, u: Readonly<Usage>, sign = 1): void {
  into.cpu += sign * u.cpu;
  into.memoryMB += sign * u.memoryMB;
  into.diskMB += sign * u.diskMB;
}

/** The first dimension in which `used` exceeds `capacity` (Nomad's AllocsFit order), or undefined when it fits. */
export function exhaustedDimension(capacity: Capacity, used: Readonly<Usage>): Dimension | undefined {
  if (used.cpu > capacity.cpu) return "cpu";
  if (used.memoryMB > capacity.memoryMB) return "memory";
  if (used.diskMB > capacity.diskMB) return "disk";
  return undefined;
}
