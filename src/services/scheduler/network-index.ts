import {
  allocNetworkUse,
  asksForNetwork,
  groupNetworkAsk,
  MAX_VALID_PORT,
  type NetworkOffer,
  type NetworkPort,
  type NetworkResource,
  nodeNetworks,
  offerNetworkUse,
  type PortMapping,
  PortSet,
} from "../../../projections/networks.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { isTerminalAlloc } from "../../../streams/allocs.ts";
import type { TaskGroupSpec } from "../../../streams/jobs.ts";
import { resolveTarget } from "./constraints.ts";
import type { AllocMetric } from "./metrics.ts";
import type { NodeUse, Plan } from "./plan.ts";

/** Nomad's maxRandPortAttempts: random picks of a dynamic port before the precise scan. */
const MAX_RAND_PORT_ATTEMPTS = 20;

/**
 * Nomad's NetworkIndex for one evaluation. Each node's ports in use (its
 * reserved ports, its live allocations' ports, the plan's placements there)
 * are gathered the first time a group asking for ports is ranked on it and
 * kept on the plan's proposed use of the node (`NodeUse.ports`), which the
 * plan updates as it places and stops. Groups that ask for no port never
 * reach this. Dynamic ports are drawn from the evaluation's seeded PRNG, so
 * a pass computes the same ports every time.
 */
export class NetworkIndex {
  private readonly asks = new WeakMap<TaskGroupSpec, boolean>();
  private readonly templates = new WeakMap<TaskGroupSpec, boolean>();
  private readonly tasks = new WeakMap<TaskGroupSpec, boolean>();
  /** Per group, per node: undefined when the node has the group's network, else why it is filtered. */
  private readonly verdicts = new WeakMap<TaskGroupSpec, WeakMap<object, string | null>>();

  constructor(
    private readonly plan: Plan,
    private readonly random: () => number,
  ) {}

  /** Whether `tg` asks for a network (cached per group version). */
  asksFor(tg: TaskGroupSpec): boolean {
    let asks = this.asks.get(tg);
    if (asks === undefined) {
      asks = asksForNetwork(tg);
      this.asks.set(tg, asks);
    }
    return asks;
  }

  /**
   * The network part of Nomad's BinPackIterator for one option: the node's
   * network mode and host networks (NetworkChecker, counted as filtered),
   * then the group's ports and each task's network (counted as exhausted
   * with Nomad's `network: ...` dimension). The offer, or undefined.
   */
  offer(node: NodeRow, use: NodeUse, tg: TaskGroupSpec, metric: AllocMetric): NetworkOffer | undefined {
    const ask = groupNetworkAsk(tg);
    if (ask && !this.networkFeasible(node, tg, ask, metric)) return undefined;
    const ports = portsOn(this.plan, use, node);
    if (ports.node.error) {
      metric.exhaustedNode(node.NodeClass, "network: invalid node");
      return undefined;
    }
    if (ports.collision) {
      metric.exhaustedNode(node.NodeClass, "network: port collision");
      return undefined;
    }
    let groupPorts: PortMapping[] | undefined;
    let taskNetworks: Record<string, NetworkResource> | undefined;
    let failure: string | undefined;
    if (ask && ((ask.ReservedPorts?.length ?? 0) > 0 || (ask.DynamicPorts?.length ?? 0) > 0)) {
      const resolved = this.templated(tg) ? resolveHostNetworks(ask, node) : ask;
      if (typeof resolved === "string") {
        metric.exhaustedNode(node.NodeClass, resolved);
        return undefined;
      }
      const assigned = assignPorts(ports, resolved, this.random);
      if (typeof assigned === "string") failure = assigned;
      else groupPorts = assigned;
    }
    if (failure === undefined && this.taskAsks(tg)) {
      // The group's ports are held while the tasks' are picked (Nomad's AddReservedPorts), then given back:
      // only an applied placement holds ports (Plan.appendPlacement).
      const taken: { ip: string; port: number }[] = [];
      const given: NetworkResource[] = [];
      for (const p of groupPorts ?? [])
        if (ports.add(p.HostIP, p.Value)) taken.push({ ip: p.HostIP, port: p.Value });
      for (const task of tg.Tasks) {
        const taskAsk = task.Resources?.Networks?.[0] as NetworkResource | undefined;
        if (!taskAsk) continue;
        const n = assignTaskNetwork(ports, taskAsk, this.random);
        if (typeof n === "string") {
          failure = n;
          break;
        }
        for (const p of n.ReservedPorts ?? [])
          if (ports.add(n.IP, p.Value)) taken.push({ ip: n.IP, port: p.Value });
        for (const p of n.DynamicPorts ?? [])
          if (ports.add(n.IP, p.Value)) taken.push({ ip: n.IP, port: p.Value });
        bandwidth(ports, n, 1);
        given.push(n);
        taskNetworks ??= {};
        taskNetworks[task.Name] = n;
      }
      for (const t of taken) ports.delete(t.ip, t.port);
      for (const n of given) bandwidth(ports, n, -1);
    }
    if (failure !== undefined) {
      metric.exhaustedNode(node.NodeClass, `network: ${failure}`);
      return undefined;
    }
    if (groupPorts && !taskNetworks) return { Ports: groupPorts };
    return {
      ...(groupPorts ? { Ports: groupPorts } : {}),
      ...(taskNetworks ? { TaskNetworks: taskNetworks } : {}),
    };
  }

  /** Whether a port of the group's network names its host network with a template (`${meta.x}`). */
  private templated(tg: TaskGroupSpec): boolean {
    let t = this.templates.get(tg);
    if (t === undefined) {
      const ask = groupNetworkAsk(tg);
      t = [...(ask?.ReservedPorts ?? []), ...(ask?.DynamicPorts ?? [])].some((p) =>
        p.HostNetwork.includes("${"),
      );
      this.templates.set(tg, t);
    }
    return t;
  }

  /** Whether a task of the group asks for a legacy network. */
  private taskAsks(tg: TaskGroupSpec): boolean {
    let t = this.tasks.get(tg);
    if (t === undefined) {
      t = tg.Tasks.some((task) => (task.Resources?.Networks?.length ?? 0) > 0);
      this.tasks.set(tg, t);
    }
    return t;
  }

  /** Nomad's NetworkChecker, its verdict kept per node for the evaluation (a refusal is counted each time). */
  private networkFeasible(
    node: NodeRow,
    tg: TaskGroupSpec,
    ask: NetworkResource,
    metric: AllocMetric,
  ): boolean {
    let byNode = this.verdicts.get(tg);
    if (!byNode) {
      byNode = new WeakMap();
      this.verdicts.set(tg, byNode);
    }
    let why = byNode.get(node);
    if (why === undefined) {
      why = networkRefusal(node, ask);
      byNode.set(node, why);
    }
    if (why === null) return true;
    metric.filterNode(node.NodeClass, why);
    return false;
  }
}

/** Why the node lacks the ask's network mode or a port's host network (Nomad's NetworkChecker), or null. */
function networkRefusal(node: NodeRow, ask: NetworkResource): string | null {
  const nets = nodeNetworks(node);
  const mode = ask.Mode || "host";
  if (mode === "none") return null;
  if (!nets.modes.has(mode)) return "missing network";
  for (const port of [...(ask.ReservedPorts ?? []), ...(ask.DynamicPorts ?? [])]) {
    if (port.HostNetwork === "") continue;
    const alias = resolveTarget(port.HostNetwork, node);
    if (alias === undefined)
      return `invalid host network ${JSON.stringify(port.HostNetwork)} template for port ${JSON.stringify(port.Label)}`;
    if (!nets.hostNetworks.has(alias))
      return `missing host network ${JSON.stringify(alias)} for port ${JSON.stringify(port.Label)}`;
  }
  return null;
}

function bandwidth(ports: PortSet, n: NetworkResource, sign: 1 | -1): void {
  if (n.MBits > 0) ports.bandwidth.set(n.Device, (ports.bandwidth.get(n.Device) ?? 0) + sign * n.MBits);
}

/**
 * The ports in use on a node as the plan would leave it (Nomad's SetNode +
 * AddAllocs over the proposed allocations), built once per node and
 * evaluation and kept up to date by the plan.
 */
export function portsOn(plan: Plan, use: NodeUse, node: NodeRow): PortSet {
  if (use.ports) return use.ports;
  const ports = new PortSet(nodeNetworks(node));
  for (const a of plan.allocs.by("node", node.ID)) {
    if (isTerminalAlloc(a) || plan.stops.has(a.ID)) continue;
    const collision = ports.addAlloc(allocNetworkUse(a));
    ports.collision ??= collision;
  }
  for (const p of plan.portPlacements.get(node.ID) ?? []) {
    const collision = ports.addAlloc(offerNetworkUse(p));
    ports.collision ??= collision;
  }
  use.ports = ports;
  return ports;
}

/** The ask with its ports' host network templates (`${meta.x}`) resolved, or Nomad's dimension when one does not resolve. */
function resolveHostNetworks(ask: NetworkResource, node: NodeRow): NetworkResource | string {
  const needs = (p: NetworkPort) => p.HostNetwork.includes("${");
  const all = [...(ask.ReservedPorts ?? []), ...(ask.DynamicPorts ?? [])];
  if (!all.some(needs)) return ask;
  const resolve = (p: NetworkPort): NetworkPort | string => {
    if (!needs(p)) return p;
    const value = resolveTarget(p.HostNetwork, node);
    return value === undefined
      ? `invalid host network ${JSON.stringify(p.HostNetwork)} template for port ${JSON.stringify(p.Label)}`
      : { ...p, HostNetwork: value };
  };
  const reserved: NetworkPort[] = [];
  const dynamic: NetworkPort[] = [];
  for (const p of ask.ReservedPorts ?? []) {
    const r = resolve(p);
    if (typeof r === "string") return r;
    reserved.push(r);
  }
  for (const p of ask.DynamicPorts ?? []) {
    const r = resolve(p);
    if (typeof r === "string") return r;
    dynamic.push(r);
  }
  return { ...ask, ReservedPorts: reserved, DynamicPorts: dynamic };
}

/** Nomad's NetworkIndex.AssignPorts: the group network's static ports, then its dynamic ones, on the host networks they name; or why not. */
export function assignPorts(
  ports: PortSet,
  ask: NetworkResource,
  random: () => number,
): PortMapping[] | string {
  const offer: PortMapping[] = [];
  const inOffer: number[] = [];
  let reservedByNetwork: Map<string, number[]> | undefined;
  for (const port of ask.ReservedPorts ?? []) {
    reservedByNetwork ??= new Map();
    const list = reservedByNetwork.get(port.HostNetwork);
    if (list) list.push(port.Value);
    else reservedByNetwork.set(port.HostNetwork, [port.Value]);
    const address = ports.node.hostNetworks.get(port.HostNetwork)?.[0];
    if (address === undefined) return `no addresses available for ${port.HostNetwork} network`;
    if (port.Value < 0 || port.Value >= MAX_VALID_PORT) return `invalid port ${port.Value} (out of range)`;
    if (ports.has(address, port.Value)) return `reserved port collision ${port.Label}=${port.Value}`;
    offer.push({ Label: port.Label, Value: port.Value, To: port.To, HostIP: address });
    inOffer.push(port.Value);
  }
  for (const port of ask.DynamicPorts ?? []) {
    const reserved = reservedByNetwork?.get(port.HostNetwork) ?? NONE;
    let given: PortMapping | undefined;
    let error: string | undefined;
    for (const address of ports.node.hostNetworks.get(port.HostNetwork) ?? NO_ADDRESSES) {
      const value =
        stochasticPort(ports, address, inOffer, reserved, random) ??
        precisePort(ports, address, inOffer, reserved, random);
      if (value === undefined) {
        error = "dynamic port selection failed";
        continue;
      }
      given = { Label: port.Label, Value: value, To: port.To === -1 ? value : port.To, HostIP: address };
      break;
    }
    if (!given) return error ?? `no addresses available for ${port.HostNetwork} network`;
    offer.push(given);
    inOffer.push(given.Value);
  }
  return offer;
}

const NONE: readonly number[] = [];
const NO_ADDRESSES: readonly string[] = [];

/**
 * Nomad's AssignTaskNetwork (a task's legacy `resources.network`): the
 * first node network with the bandwidth left and the static ports free,
 * with its dynamic ports picked from the node's range; or why not.
 */
export function assignTaskNetwork(
  ports: PortSet,
  ask: NetworkResource,
  random: () => number,
): NetworkResource | string {
  let error = "no networks available";
  for (const n of ports.node.taskNetworks) {
    const used = ports.bandwidth.get(n.Device) ?? 0;
    if (used + ask.MBits > n.MBits) {
      error = "bandwidth exceeded";
      continue;
    }
    const collision = (ask.ReservedPorts ?? []).find(
      (p) => p.Value < 0 || p.Value >= MAX_VALID_PORT || ports.has(n.IP, p.Value),
    );
    if (collision) {
      error =
        collision.Value < 0 || collision.Value >= MAX_VALID_PORT
          ? `invalid port ${collision.Value} (out of range)`
          : `reserved port collision ${collision.Label}=${collision.Value}`;
      continue;
    }
    const reserved = (ask.ReservedPorts ?? []).map((p) => p.Value);
    const dynamic: NetworkPort[] = [];
    const picked: number[] = [];
    let failed = false;
    for (const p of ask.DynamicPorts ?? []) {
      const value =
        stochasticPort(ports, n.IP, picked, reserved, random) ??
        precisePort(ports, n.IP, picked, reserved, random);
      if (value === undefined) {
        failed = true;
        break;
      }
      picked.push(value);
      dynamic.push({ ...p, Value: value, To: p.To === -1 ? value : p.To });
    }
    if (failed) {
      error = "dynamic port selection failed";
      continue;
    }
    return {
      Mode: ask.Mode,
      Device: n.Device,
      CIDR: "",
      IP: n.IP,
      Hostname: "",
      MBits: ask.MBits,
      DNS: ask.DNS,
      ReservedPorts: ask.ReservedPorts,
      DynamicPorts: dynamic.length > 0 ? dynamic : null,
    };
  }
  return error;
}

/** Nomad's getDynamicPortsStochastic for one port: up to 20 random picks in [min, max). */
function stochasticPort(
  ports: PortSet,
  address: string,
  inOffer: readonly number[],
  reserved: readonly number[],
  random: () => number,
): number | undefined {
  const min = ports.node.minDynamicPort;
  const max = ports.node.maxDynamicPort;
  for (let attempt = 0; attempt < MAX_RAND_PORT_ATTEMPTS; attempt++) {
    const port = max - min > 0 ? min + Math.floor(random() * (max - min)) : min;
    if (ports.has(address, port) || inOffer.includes(port) || reserved.includes(port)) continue;
    return port;
  }
  return undefined;
}

/** Nomad's getDynamicPortsPrecise for one port: a random one of every free port in [min, max]. */
function precisePort(
  ports: PortSet,
  address: string,
  inOffer: readonly number[],
  reserved: readonly number[],
  random: () => number,
): number | undefined {
  const free: number[] = [];
  for (let p = ports.node.minDynamicPort; p <= ports.node.maxDynamicPort && p < MAX_VALID_PORT; p++) {
    if (!ports.has(address, p) && !inOffer.includes(p) && !reserved.includes(p)) free.push(p);
  }
  if (free.length === 0) return undefined;
  return free[Math.floor(random() * free.length)];
}
