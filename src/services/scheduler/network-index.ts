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

/** Why a port could not be given (Nomad's AssignPorts / AssignTaskNetwork errors). */
class PortError extends Error {}

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
    if (ask && !this.networkFeasible(node, ask, metric)) return undefined;
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
    const taken: { ip: string; port: number }[] = [];
    const given: NetworkResource[] = [];
    try {
      if (ask && ((ask.ReservedPorts?.length ?? 0) > 0 || (ask.DynamicPorts?.length ?? 0) > 0)) {
        const resolved = resolveHostNetworks(ask, node);
        if (typeof resolved === "string") {
          metric.exhaustedNode(node.NodeClass, resolved);
          return undefined;
        }
        groupPorts = assignPorts(ports, resolved, this.random);
        // Reserved for the tasks' asks below, as Nomad's AddReservedPorts.
        for (const p of groupPorts)
          if (ports.add(p.HostIP, p.Value)) taken.push({ ip: p.HostIP, port: p.Value });
      }
      let taskNetworks: Record<string, NetworkResource> | undefined;
      for (const task of tg.Tasks) {
        const taskAsk = task.Resources?.Networks?.[0] as NetworkResource | undefined;
        if (!taskAsk) continue;
        const n = assignTaskNetwork(ports, taskAsk, this.random);
        for (const p of [...(n.ReservedPorts ?? []), ...(n.DynamicPorts ?? [])])
          if (ports.add(n.IP, p.Value)) taken.push({ ip: n.IP, port: p.Value });
        bandwidth(ports, n, 1);
        given.push(n);
        taskNetworks ??= {};
        taskNetworks[task.Name] = n;
      }
      return {
        ...(groupPorts ? { Ports: groupPorts } : {}),
        ...(taskNetworks ? { TaskNetworks: taskNetworks } : {}),
      };
    } catch (err) {
      if (!(err instanceof PortError)) throw err;
      metric.exhaustedNode(node.NodeClass, `network: ${err.message}`);
      return undefined;
    } finally {
      // Only an applied placement holds ports: the plan adds them (Plan.appendPlacement).
      for (const t of taken) ports.delete(t.ip, t.port);
      for (const n of given) bandwidth(ports, n, -1);
    }
  }

  /** Nomad's NetworkChecker: the node has the network mode, and every port's host network. */
  private networkFeasible(node: NodeRow, ask: NetworkResource, metric: AllocMetric): boolean {
    const nets = nodeNetworks(node);
    const mode = ask.Mode || "host";
    if (mode === "none") return true;
    if (!nets.modes.has(mode)) {
      metric.filterNode(node.NodeClass, "missing network");
      return false;
    }
    for (const port of [...(ask.ReservedPorts ?? []), ...(ask.DynamicPorts ?? [])]) {
      if (port.HostNetwork === "") continue;
      const alias = resolveTarget(port.HostNetwork, node);
      if (alias === undefined) {
        metric.filterNode(
          node.NodeClass,
          `invalid host network ${JSON.stringify(port.HostNetwork)} template for port ${JSON.stringify(port.Label)}`,
        );
        return false;
      }
      if (!nets.hostNetworks.has(alias)) {
        metric.filterNode(
          node.NodeClass,
          `missing host network ${JSON.stringify(alias)} for port ${JSON.stringify(port.Label)}`,
        );
        return false;
      }
    }
    return true;
  }
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
  for (const p of plan.placements) {
    if (p.NodeID !== node.ID || (!p.Ports && !p.TaskNetworks)) continue;
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

/** Nomad's NetworkIndex.AssignPorts: the group network's static ports, then its dynamic ones, on the host networks they name. */
export function assignPorts(ports: PortSet, ask: NetworkResource, random: () => number): PortMapping[] {
  const offer: PortMapping[] = [];
  const inOffer: number[] = [];
  const reservedByNetwork = new Map<string, number[]>();
  for (const port of ask.ReservedPorts ?? []) {
    const list = reservedByNetwork.get(port.HostNetwork) ?? [];
    list.push(port.Value);
    reservedByNetwork.set(port.HostNetwork, list);
    const address = ports.node.hostNetworks.get(port.HostNetwork)?.[0];
    if (address === undefined) throw new PortError(`no addresses available for ${port.HostNetwork} network`);
    if (port.Value < 0 || port.Value >= MAX_VALID_PORT)
      throw new PortError(`invalid port ${port.Value} (out of range)`);
    if (ports.has(address, port.Value))
      throw new PortError(`reserved port collision ${port.Label}=${port.Value}`);
    offer.push({ Label: port.Label, Value: port.Value, To: port.To, HostIP: address });
    inOffer.push(port.Value);
  }
  for (const port of ask.DynamicPorts ?? []) {
    const reserved = reservedByNetwork.get(port.HostNetwork) ?? [];
    let given: PortMapping | undefined;
    let error: string | undefined;
    for (const address of ports.node.hostNetworks.get(port.HostNetwork) ?? []) {
      const used = (p: number) => ports.has(address, p);
      const value =
        stochasticPort(
          used,
          inOffer,
          reserved,
          ports.node.minDynamicPort,
          ports.node.maxDynamicPort,
          random,
        ) ??
        precisePort(used, inOffer, reserved, ports.node.minDynamicPort, ports.node.maxDynamicPort, random);
      if (value === undefined) {
        error = "dynamic port selection failed";
        continue;
      }
      given = { Label: port.Label, Value: value, To: port.To === -1 ? value : port.To, HostIP: address };
      break;
    }
    if (!given) throw new PortError(error ?? `no addresses available for ${port.HostNetwork} network`);
    offer.push(given);
    inOffer.push(given.Value);
  }
  return offer;
}

/**
 * Nomad's AssignTaskNetwork (a task's legacy `resources.network`): the
 * first node network with the bandwidth left and the static ports free,
 * with its dynamic ports picked from the node's range.
 */
export function assignTaskNetwork(
  ports: PortSet,
  ask: NetworkResource,
  random: () => number,
): NetworkResource {
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
    const isUsed = (p: number) => ports.has(n.IP, p);
    const reserved = (ask.ReservedPorts ?? []).map((p) => p.Value);
    const dynamic: NetworkPort[] = [];
    const picked: number[] = [];
    let failed = false;
    for (const p of ask.DynamicPorts ?? []) {
      const value =
        stochasticPort(
          isUsed,
          picked,
          reserved,
          ports.node.minDynamicPort,
          ports.node.maxDynamicPort,
          random,
        ) ??
        precisePort(isUsed, picked, reserved, ports.node.minDynamicPort, ports.node.maxDynamicPort, random);
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
  throw new PortError(error);
}

/** Nomad's getDynamicPortsStochastic for one port: up to 20 random picks in [min, max). */
function stochasticPort(
  used: (p: number) => boolean,
  inOffer: readonly number[],
  reserved: readonly number[],
  min: number,
  max: number,
  random: () => number,
): number | undefined {
  for (let attempt = 0; attempt < MAX_RAND_PORT_ATTEMPTS; attempt++) {
    const port = max - min > 0 ? min + Math.floor(random() * (max - min)) : min;
    if (used(port) || inOffer.includes(port) || reserved.includes(port)) continue;
    return port;
  }
  return undefined;
}

/** Nomad's getDynamicPortsPrecise for one port: a random one of every free port in [min, max]. */
function precisePort(
  used: (p: number) => boolean,
  inOffer: readonly number[],
  reserved: readonly number[],
  min: number,
  max: number,
  random: () => number,
): number | undefined {
  const free: number[] = [];
  for (let p = min; p <= max && p < MAX_VALID_PORT; p++) {
    if (!used(p) && !inOffer.includes(p) && !reserved.includes(p)) free.push(p);
  }
  if (free.length === 0) return undefined;
  return free[Math.floor(random() * free.length)];
}
