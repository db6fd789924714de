import {
  type AllocationSpec,
  type AllocPlacement,
  isTerminalAlloc,
  type NetworkResource,
  type AllocatedPortMapping as PortMapping,
} from "../streams/allocs.ts";
import type { TaskGroupSpec } from "../streams/jobs.ts";
import type { NodeSpec } from "../streams/nodes.ts";

/**
 * Port and network accounting shared by the scheduler (its NetworkIndex) and
 * the plan apply (the second check that no port is handed out twice on a
 * node): both must read nodes and allocations alike. Pure; the random picks
 * of dynamic ports live in the scheduler (src/services/scheduler/network-index.ts).
 */

/** Nomad's MaxValidPort: ports are in [0, 65536). */
export const MAX_VALID_PORT = 65_536;
/** Nomad's DefaultMinDynamicPort / DefaultMaxDynamicPort. */
export const DEFAULT_MIN_DYNAMIC_PORT = 20_000;
export const DEFAULT_MAX_DYNAMIC_PORT = 32_000;

export type { AllocatedPortMapping as PortMapping, NetworkPort, NetworkResource } from "../streams/allocs.ts";

type Json = Readonly<Record<string, unknown>>;

const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined;
const arr = (v: unknown): readonly unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === "string" ? v : "");
const int = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/** A network the node offers to task-level (legacy) asks: Nomad's NodeResources.Networks entry with an address. */
export interface TaskNetwork {
  readonly Device: string;
  readonly IP: string;
  readonly CIDR: string;
  readonly MBits: number;
}

/**
 * What a node offers for ports (the part of Nomad's NetworkIndex.SetNode
 * that depends only on the node): addresses per host network alias, the
 * legacy task networks, the network modes it supports, the ports it
 * reserves per address, and its dynamic port range.
 */
export interface NodeNetworks {
  /** Alias → addresses (Nomad's HostNetworks), from NodeNetworks, or synthesized as `default` from Networks. */
  readonly hostNetworks: ReadonlyMap<string, readonly string[]>;
  readonly taskNetworks: readonly TaskNetwork[];
  /** Network modes the node fingerprinted ("" is `host`). */
  readonly modes: ReadonlySet<string>;
  /** Address → ports the node reserves there. */
  readonly reserved: ReadonlyMap<string, ReadonlySet<number>>;
  readonly minDynamicPort: number;
  readonly maxDynamicPort: number;
  /** The first address of a `host` network, given to a group network's allocation (Nomad's AllocatedPortsToNetworkResouce). */
  readonly hostIP: string;
  /** Set when the node's reserved ports cannot be read (Nomad's SetNode error). */
  readonly error?: string;
}

const nodeNetworksCache = new WeakMap<object, NodeNetworks>();

type NodeFields = Pick<NodeSpec, "NodeResources" | "ReservedResources" | "Resources" | "Reserved">;

/** The node's networks as Nomad's NetworkIndex.SetNode reads them (one object per node row). */
export function nodeNetworks(node: NodeFields): NodeNetworks {
  const cached = nodeNetworksCache.get(node);
  if (cached) return cached;
  const res = obj(node.NodeResources);
  const legacyNetworks =
    res && arr(res.Networks).length > 0 ? arr(res.Networks) : arr(obj(node.Resources)?.Networks);
  const taskNetworks: TaskNetwork[] = [];
  const modes = new Set<string>();
  for (const n of legacyNetworks) {
    const o = obj(n);
    if (!o) continue;
    modes.add(str(o.Mode) || "host");
    if (str(o.IP) !== "")
      taskNetworks.push({ Device: str(o.Device), IP: str(o.IP), CIDR: str(o.CIDR), MBits: int(o.MBits) });
  }
  // Nomad's Node.Canonicalize: a node without NodeNetworks (before 0.12) has its Networks as `default`.
  let nodeNets = arr(res?.NodeNetworks);
  if (nodeNets.length === 0) {
    nodeNets = legacyNetworks.map((n) => {
      const o = obj(n) ?? {};
      return {
        Mode: str(o.Mode),
        Device: str(o.Device),
        Addresses: str(o.IP) === "" ? [] : [{ Alias: "default", Address: str(o.IP) }],
      };
    });
  }
  let error: string | undefined;
  let global: number[] = [];
  const reservedNetworks = obj(obj(node.ReservedResources)?.Networks);
  const hostPorts = str(reservedNetworks?.ReservedHostPorts);
  if (hostPorts !== "") {
    const parsed = parsePortRanges(hostPorts);
    if (typeof parsed === "string") error = `error parsing reserved_ports: ${parsed}`;
    else global = parsed;
  }
  const reserved = new Map<string, Set<number>>();
  const reserve = (address: string, ports: readonly number[]) => {
    let set = reserved.get(address);
    if (!set) {
      set = new Set();
      reserved.set(address, set);
    }
    for (const p of ports) set.add(p);
  };
  for (const t of taskNetworks) reserve(t.IP, global);
  const hostNetworks = new Map<string, string[]>();
  let hostIP = "";
  for (const n of nodeNets) {
    const o = obj(n);
    if (!o) continue;
    const addresses = arr(o.Addresses);
    if (hostIP === "" && (str(o.Mode) || "host") === "host") {
      const first = str(obj(addresses[0])?.Address);
      if (first !== "") hostIP = first;
    }
    for (const a of addresses) {
      const addr = obj(a);
      if (!addr) continue;
      const alias = str(addr.Alias);
      const address = str(addr.Address);
      const list = hostNetworks.get(alias) ?? [];
      list.push(address);
      hostNetworks.set(alias, list);
      reserve(address, global);
      const own = str(addr.ReservedPorts);
      if (own !== "") {
        const parsed = parsePortRanges(own);
        if (typeof parsed === "string") error ??= `error parsing reserved_ports: ${parsed}`;
        else reserve(address, parsed);
      }
    }
  }
  if (hostIP === "") hostIP = taskNetworks[0]?.IP ?? "";
  const min = int(res?.MinDynamicPort);
  const max = int(res?.MaxDynamicPort);
  const out: NodeNetworks = {
    hostNetworks,
    taskNetworks,
    modes,
    reserved,
    minDynamicPort: min > 0 ? min : DEFAULT_MIN_DYNAMIC_PORT,
    maxDynamicPort: max > 0 ? max : DEFAULT_MAX_DYNAMIC_PORT,
    hostIP,
    ...(error === undefined ? {} : { error }),
  };
  nodeNetworksCache.set(node, out);
  return out;
}

/** Nomad's ParsePortRanges: "22,80,8000-8100" as the ports it names, or the error text. */
export function parsePortRanges(spec: string): number[] | string {
  const ports = new Set<number>();
  for (const raw of spec.split(",")) {
    const part = raw.trim();
    if (part === "") continue;
    const range = part.split("-");
    if (range.length === 1) {
      const p = Number(part);
      if (!/^\d+$/.test(part) || p >= MAX_VALID_PORT) return `invalid port ${JSON.stringify(part)}`;
      ports.add(p);
    } else if (range.length === 2) {
      const [a, b] = range.map((x) => x.trim()) as [string, string];
      if (!/^\d+$/.test(a) || !/^\d+$/.test(b)) return `invalid range ${JSON.stringify(part)}`;
      const start = Number(a);
      const end = Number(b);
      if (end < start) return `invalid range: starting value (${end}) less than ending (${start}) value`;
      if (end >= MAX_VALID_PORT) return `port must be < ${MAX_VALID_PORT} but found ${end}`;
      for (let p = start; p <= end; p++) ports.add(p);
    } else return `can only parse single port numbers or port ranges (ex. 80,100-120,150)`;
  }
  return [...ports].sort((x, y) => x - y);
}

/** One port an allocation holds on its node. */
export interface HeldPort {
  readonly ip: string;
  readonly port: number;
}

/** What an allocation holds of its node's network: its ports, and bandwidth per device of its task networks. */
export interface AllocNetworkUse {
  readonly ports: readonly HeldPort[];
  readonly mbits: ReadonlyMap<string, number> | null;
}

const NO_NETWORK: AllocNetworkUse = { ports: [], mbits: null };
const allocNetworkCache = new WeakMap<object, AllocNetworkUse>();

function networkPorts(n: Json, into: HeldPort[]): void {
  const ip = str(n.IP);
  for (const p of [...arr(n.ReservedPorts), ...arr(n.DynamicPorts)]) {
    const port = obj(p);
    if (port) into.push({ ip, port: int(port.Value) });
  }
}

/**
 * The ports an allocation holds, read as Nomad's NetworkIndex.AddAllocs
 * does: its Shared.Ports when it has some (else its group networks), each
 * task's first network, or the legacy Resources' networks.
 */
export function allocNetworkUse(
  a: Pick<AllocationSpec, "AllocatedResources" | "Resources">,
): AllocNetworkUse {
  const key = obj(a.AllocatedResources) ?? obj(a.Resources);
  if (!key) return NO_NETWORK;
  const cached = allocNetworkCache.get(key);
  if (cached) return cached;
  const ports: HeldPort[] = [];
  let mbits: Map<string, number> | null = null;
  const allocated = obj(a.AllocatedResources);
  if (allocated) {
    const shared = obj(allocated.Shared);
    const sharedPorts = arr(shared?.Ports);
    if (sharedPorts.length > 0) {
      for (const p of sharedPorts) {
        const m = obj(p);
        if (m) ports.push({ ip: str(m.HostIP), port: int(m.Value) });
      }
    } else for (const n of arr(shared?.Networks)) networkPorts(obj(n) ?? {}, ports);
    const tasks = obj(allocated.Tasks) ?? {};
    for (const name of Object.keys(tasks)) {
      const n = obj(arr(obj(tasks[name])?.Networks)[0]);
      if (!n) continue;
      networkPorts(n, ports);
      if (int(n.MBits) > 0) {
        mbits ??= new Map();
        mbits.set(str(n.Device), (mbits.get(str(n.Device)) ?? 0) + int(n.MBits));
      }
    }
  } else {
    for (const n of arr(obj(a.Resources)?.Networks)) networkPorts(obj(n) ?? {}, ports);
  }
  const use = ports.length === 0 && mbits === null ? NO_NETWORK : { ports, mbits };
  allocNetworkCache.set(key, use);
  return use;
}

/** Whether a group asks for a network at all (its own or a task's): only those pay for port accounting. */
export function asksForNetwork(tg: TaskGroupSpec): boolean {
  if (arr(tg.Networks).length > 0) return true;
  for (const t of tg.Tasks) if (arr(t.Resources?.Networks).length > 0) return true;
  return false;
}

/**
 * Ports in use on one node, per address (Nomad's NetworkIndex.UsedPorts),
 * over the node's reserved ports. `add` answers the collision instead of
 * recording it, so the caller decides what a collision means.
 */
export class PortSet {
  private readonly used = new Map<string, Set<number>>();
  readonly bandwidth = new Map<string, number>();
  /** A port two allocations already on the node both hold (Nomad's AddAllocs collision): set by the caller. */
  collision: HeldPort | undefined = undefined;

  constructor(readonly node: NodeNetworks) {}

  has(ip: string, port: number): boolean {
    return this.node.reserved.get(ip)?.has(port) === true || this.used.get(ip)?.has(port) === true;
  }

  /** Marks a port used; false when it already was (a collision), leaving it marked. */
  add(ip: string, port: number): boolean {
    if (this.has(ip, port)) return false;
    let set = this.used.get(ip);
    if (!set) {
      set = new Set();
      this.used.set(ip, set);
    }
    set.add(port);
    return true;
  }

  delete(ip: string, port: number): void {
    this.used.get(ip)?.delete(port);
  }

  /** Adds what an allocation holds; the first port that collides (Nomad's AddAllocs reason), or undefined. */
  addAlloc(use: AllocNetworkUse): HeldPort | undefined {
    let collision: HeldPort | undefined;
    for (const p of use.ports) {
      if (p.port < 0 || p.port >= MAX_VALID_PORT || !this.add(p.ip, p.port)) collision ??= p;
    }
    if (use.mbits) for (const [d, m] of use.mbits) this.bandwidth.set(d, (this.bandwidth.get(d) ?? 0) + m);
    return collision;
  }

  removeAlloc(use: AllocNetworkUse): void {
    for (const p of use.ports) this.delete(p.ip, p.port);
    if (use.mbits) for (const [d, m] of use.mbits) this.bandwidth.set(d, (this.bandwidth.get(d) ?? 0) - m);
  }
}

/** A placement's network offer in the compact record: the group's ports, and each task's network. */
export interface NetworkOffer {
  /** The group network's ports (Nomad's AllocatedResources.Shared.Ports). */
  readonly Ports?: readonly PortMapping[];
  /** Task name → the network it was given (Nomad's AllocatedTaskResources.Networks[0]). */
  readonly TaskNetworks?: Readonly<Record<string, NetworkResource>>;
}

/** What an offer holds, as {@link allocNetworkUse} would read it from the finished allocation. */
export function offerNetworkUse(offer: NetworkOffer): AllocNetworkUse {
  const ports: HeldPort[] = [];
  let mbits: Map<string, number> | null = null;
  for (const p of offer.Ports ?? []) ports.push({ ip: p.HostIP, port: p.Value });
  for (const n of Object.values(offer.TaskNetworks ?? {})) {
    networkPorts(n as unknown as Json, ports);
    if (n.MBits > 0) {
      mbits ??= new Map();
      mbits.set(n.Device, (mbits.get(n.Device) ?? 0) + n.MBits);
    }
  }
  return { ports, mbits };
}

/**
 * Nomad's AllocatedPortsToNetworkResouce: the group's network ask with the
 * dynamic ports' values filled in and the node's host address.
 */
export function groupNetworkOf(
  ask: NetworkResource,
  ports: readonly PortMapping[],
  hostIP: string,
): NetworkResource {
  const byLabel = new Map(ports.map((p) => [p.Label, p]));
  return {
    ...ask,
    IP: hostIP,
    DynamicPorts:
      ask.DynamicPorts?.map((p) => {
        const given = byLabel.get(p.Label);
        return given ? { ...p, Value: given.Value, To: given.To } : p;
      }) ?? null,
  };
}

/** The group's network ask as the canonical job holds it (Nomad reads only the first). */
export function groupNetworkAsk(tg: TaskGroupSpec): NetworkResource | undefined {
  return arr(tg.Networks)[0] as NetworkResource | undefined;
}

/**
 * An allocation's resources with its network offer: the group's shared
 * resources (one object per group version) copied with Shared.Networks and
 * Shared.Ports, the tasks' networks, and the legacy totals (Nomad's
 * Resources.Networks is the tasks' and the group's networks).
 */
export function withNetworkOffer<
  R extends {
    readonly AllocatedResources: Json;
    readonly TaskResources: Json;
    readonly Resources: Json;
  },
>(resources: R, tg: TaskGroupSpec, offer: NetworkOffer, hostIP: string): R {
  const allocated = resources.AllocatedResources;
  const ask = groupNetworkAsk(tg);
  const sharedNetworks = ask && offer.Ports ? [groupNetworkOf(ask, offer.Ports, hostIP)] : null;
  let tasks: Json = obj(allocated.Tasks) ?? {};
  let legacyTasks: Json = resources.TaskResources;
  const taskNetworks = offer.TaskNetworks;
  if (taskNetworks) {
    const t: Record<string, unknown> = { ...tasks };
    const l: Record<string, unknown> = { ...legacyTasks };
    for (const name of Object.keys(taskNetworks)) {
      const n = [taskNetworks[name]];
      t[name] = { ...obj(t[name]), Networks: n };
      l[name] = { ...obj(l[name]), Networks: n };
    }
    tasks = t;
    legacyTasks = l;
  }
  const legacyNetworks = [...(sharedNetworks ?? []), ...Object.values(taskNetworks ?? {})];
  return {
    ...resources,
    AllocatedResources: {
      ...allocated,
      Tasks: tasks,
      Shared: { ...obj(allocated.Shared), Networks: sharedNetworks, Ports: offer.Ports ?? null },
    },
    TaskResources: legacyTasks,
    Resources: { ...resources.Resources, Networks: legacyNetworks.length > 0 ? legacyNetworks : null },
  };
}

/** An allocation's network part, to be kept by an in-place update (Nomad restores the existing offers). */
export function heldOffer(a: Pick<AllocationSpec, "AllocatedResources">): NetworkOffer | undefined {
  const allocated = obj(a.AllocatedResources);
  if (!allocated) return undefined;
  const ports = arr(obj(allocated.Shared)?.Ports) as PortMapping[];
  let taskNetworks: Record<string, NetworkResource> | undefined;
  const tasks = obj(allocated.Tasks) ?? {};
  for (const name of Object.keys(tasks)) {
    const n = arr(obj(tasks[name])?.Networks)[0] as NetworkResource | undefined;
    if (!n) continue;
    taskNetworks ??= {};
    taskNetworks[name] = n;
  }
  if (ports.length === 0 && !taskNetworks) return undefined;
  return {
    ...(ports.length > 0 ? { Ports: ports } : {}),
    ...(taskNetworks ? { TaskNetworks: taskNetworks } : {}),
  };
}

/**
 * The second check's port part for one node (Nomad's AllocsFit network
 * check at plan apply): the node's reserved ports, the ports of what it
 * keeps running, then each new offer; the reason of the first collision,
 * or undefined when no port is handed out twice.
 */
export function portCollision(
  node: NodeFields,
  keeping: Iterable<Pick<AllocationSpec, "ID" | "AllocatedResources" | "Resources">>,
  adding: readonly { readonly ID: string; readonly use: AllocNetworkUse }[],
): string | undefined {
  const nets = nodeNetworks(node);
  if (nets.error) return `reserved node port collision: ${nets.error}`;
  const set = new PortSet(nets);
  const collided = (id: string, use: AllocNetworkUse) => {
    const p = set.addAlloc(use);
    return p
      ? `reserved alloc port collision: collision when reserving port for alloc ${id}: [port ${p.port} already in use]`
      : undefined;
  };
  for (const a of keeping) {
    const use = allocNetworkUse(a);
    if (use === NO_NETWORK) continue;
    const reason = collided(a.ID, use);
    if (reason) return reason;
  }
  for (const a of adding) {
    const reason = collided(a.ID, a.use);
    if (reason) return reason;
  }
  // Nomad 1.6's Overcommitted is always false (bandwidth is deprecated): only the tasks' own asks check it.
  return undefined;
}

/** The address a node gives a group network's allocation ("" for no node). */
export function hostIPOf(node: NodeFields | undefined): string {
  return node ? nodeNetworks(node).hostIP : "";
}

/**
 * The port part of the second check for one node's part of a plan: only
 * when something placed there holds ports (the node's own allocations never
 * collide among themselves, each having passed this check).
 */
export function placementPortCollision(
  node: NodeFields,
  onNode: Iterable<
    Pick<AllocationSpec, "ID" | "AllocatedResources" | "Resources" | "DesiredStatus" | "ClientStatus">
  >,
  leaving: ReadonlySet<string>,
  placed: readonly AllocationSpec[],
  placements: readonly AllocPlacement[],
): string | undefined {
  const adding: { ID: string; use: AllocNetworkUse }[] = [];
  for (const a of placed) {
    const use = allocNetworkUse(a);
    if (use !== NO_NETWORK) adding.push({ ID: a.ID, use });
  }
  for (const p of placements)
    if (p.Ports || p.TaskNetworks) adding.push({ ID: p.ID, use: offerNetworkUse(p) });
  if (adding.length === 0) return undefined;
  const keeping: Pick<AllocationSpec, "ID" | "AllocatedResources" | "Resources">[] = [];
  for (const a of onNode) if (!isTerminalAlloc(a) && !leaving.has(a.ID)) keeping.push(a);
  return portCollision(node, keeping, adding);
}
