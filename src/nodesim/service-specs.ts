/**
 * What the simulated client needs to register an allocation's native
 * services (`provider = "nomad"`) as Nomad's client builds them
 * (client/serviceregistration/nsd.generateNomadServiceRegistration): the
 * services of the group and of each task, the ports and networks the
 * server allocated, and the rules that turn them into an address and port.
 */
import type { ServiceRegistrationSpec } from "../../streams/service-registrations.ts";

/** A `service` block with `provider = "nomad"`, as the job carries it (before interpolation). */
export interface SimService {
  readonly Name: string;
  readonly PortLabel: string;
  readonly Tags: readonly string[];
  readonly CanaryTags: readonly string[];
  /** A custom advertise address; "" for none. */
  readonly Address: string;
  /** "" reads as "auto". */
  readonly AddressMode: string;
}

/** Nomad's AllocatedPortMapping. */
export interface SimPortMapping {
  readonly Label: string;
  readonly Value: number;
  readonly To: number;
  readonly HostIP: string;
}

/** A NetworkResource as far as addresses go: its IP and its labelled ports (HostIP: the network's IP). */
export interface SimNetwork {
  readonly IP: string;
  readonly Ports: readonly SimPortMapping[];
}

/** Where the allocation's services are reached, from its AllocatedResources. */
export interface SimNetworking {
  /**
   * Whether the server allocated any port or network to the allocation; a
   * server that assigns none (chronomad before it placed ports) leaves a
   * port label nothing to resolve to.
   */
  readonly portsAllocated: boolean;
  /** AllocatedResources.Shared.Ports. */
  readonly ports: readonly SimPortMapping[];
  /** AllocatedResources.Shared.Networks: the group's network. */
  readonly groupNetworks: readonly SimNetwork[];
  /** AllocatedResources.Tasks[task].Networks. */
  readonly taskNetworks: Readonly<Record<string, readonly SimNetwork[]>>;
}

/** The node registering: its identity in a registration, and its address. */
export interface SimNodeInfo {
  readonly ID: string;
  readonly Name: string;
  readonly Datacenter: string;
  /** The node's host network IP. */
  readonly IP: string;
}

/** Nomad's ServiceRegistration as a client sends it in ServiceRegistration.Upsert: the server's spec, indexes aside. */
export type ServiceRegistrationBody = ServiceRegistrationSpec;

/** What of the allocation a registration and its interpolation read. */
export interface SimServiceAlloc {
  readonly ID: string;
  readonly Name: string;
  readonly Namespace: string;
  readonly JobID: string;
  readonly JobName: string;
  readonly TaskGroup: string;
  readonly Canary: boolean;
  readonly GroupServices: readonly SimService[];
  readonly Tasks: readonly { readonly Name: string; readonly Services: readonly SimService[] }[];
  readonly Networking: SimNetworking;
}

/** The networking of an allocation with no service to register, which nothing reads. */
export const NO_NETWORKING: SimNetworking = {
  portsAllocated: false,
  ports: [],
  groupNetworks: [],
  taskNetworks: {},
};

type Json = Record<string, unknown>;

const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined;
const str = (v: unknown): string => (typeof v === "string" ? v : "");
const int = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const strings = (v: unknown): string[] => list(v).filter((s): s is string => typeof s === "string");

/**
 * The `nomad` provider's services of a group's or task's `Services`. A
 * service without a provider is Consul's (Nomad's Service.Canonicalize),
 * and the simulated client has no Consul to register it with.
 */
export function nomadServices(services: unknown): SimService[] {
  if (!Array.isArray(services) || services.length === 0) return [];
  return (services as unknown[])
    .map(obj)
    .filter((s): s is Json => s !== undefined && s.Provider === "nomad" && typeof s.Name === "string")
    .map((s) => ({
      Name: s.Name as string,
      PortLabel: str(s.PortLabel),
      Tags: strings(s.Tags),
      CanaryTags: strings(s.CanaryTags),
      Address: str(s.Address),
      AddressMode: str(s.AddressMode),
    }));
}

/** The allocation's AllocatedResources, as far as its services' addresses go. */
export function simNetworking(allocatedResources: unknown): SimNetworking {
  const resources = obj(allocatedResources);
  const shared = obj(resources?.Shared);
  const taskNetworks: Record<string, SimNetwork[]> = {};
  for (const [task, res] of Object.entries(obj(resources?.Tasks) ?? {})) {
    taskNetworks[task] = networks(obj(res)?.Networks);
  }
  const ports = list(shared?.Ports)
    .map(obj)
    .filter((p): p is Json => p !== undefined)
    .map((p) => ({ Label: str(p.Label), Value: int(p.Value), To: int(p.To), HostIP: str(p.HostIP) }));
  const groupNetworks = networks(shared?.Networks);
  return {
    portsAllocated:
      ports.length > 0 || groupNetworks.length > 0 || Object.values(taskNetworks).some((n) => n.length > 0),
    ports,
    groupNetworks,
    taskNetworks,
  };
}

function networks(v: unknown): SimNetwork[] {
  return list(v)
    .map(obj)
    .filter((n): n is Json => n !== undefined)
    .map((n) => {
      const IP = str(n.IP);
      const ports = [...list(n.ReservedPorts), ...list(n.DynamicPorts)]
        .map(obj)
        .filter((p): p is Json => p !== undefined)
        .map((p) => ({ Label: str(p.Label), Value: int(p.Value), To: int(p.To), HostIP: IP }));
      return { IP, Ports: ports };
    });
}

/** Nomad's MakeAllocServiceID; `workload` is the task's name, or `group-<group>` for group services. */
export function allocServiceID(allocID: string, workload: string, service: SimService): string {
  return `_nomad-task-${allocID}-${workload}-${service.Name}-${service.PortLabel}`;
}

/** Why a service's address cannot be resolved (Nomad fails the whole workload's registration then). */
export class ServiceAddressError extends Error {
  constructor(service: string, reason: string) {
    super(`unable to get address for service ${JSON.stringify(service)}: ${reason}`);
    this.name = "ServiceAddressError";
  }
}

/**
 * Nomad's serviceregistration.GetAddress for a client whose driver
 * advertises no network of its own (the simulated driver's), so `auto` is
 * `host`. One departure: a port label of an allocation the server assigned
 * no port or network at all (a server that places no ports) resolves to the
 * node's address (or the custom one), port 0, where Nomad's client would
 * refuse to register the workload.
 */
export function serviceAddress(
  service: SimService,
  networks: readonly SimNetwork[],
  networking: SimNetworking,
  nodeIP: string,
): { Address: string; Port: number } {
  const { Address: address, PortLabel: label } = service;
  const fail = (reason: string) => new ServiceAddressError(service.Name, reason);
  const mode = service.AddressMode || "auto";
  const mapped = networking.ports.find((p) => p.Label === label);
  const numeric = /^-?\d+$/.test(label) ? Number(label) : undefined;
  if (mode === "auto" && address !== "") {
    if (label === "") return { Address: address, Port: 0 };
    if (mapped) return { Address: address, Port: mapped.Value };
    if (numeric === undefined && !networking.portsAllocated) return { Address: address, Port: 0 };
    if (numeric === undefined)
      throw fail(`invalid port: "${label}": not a valid port mapping or numeric port`);
    return { Address: address, Port: numeric };
  }
  if (mode === "auto" || mode === "host") {
    if (address !== "") throw fail(`cannot use custom advertise address with "host" address mode`);
    if (label === "") return { Address: networks.length === 1 ? networks[0]!.IP : "", Port: 0 };
    if (mapped) return { Address: mapped.HostIP, Port: mapped.Value };
    const inNetwork = networks.flatMap((n) => n.Ports).find((p) => p.Label === label);
    if (inNetwork && inNetwork.Value > 0) return { Address: inNetwork.HostIP, Port: inNetwork.Value };
    if (numeric === undefined && !networking.portsAllocated) return { Address: nodeIP, Port: 0 };
    if (numeric === undefined) throw fail(`invalid port "${label}": port label not found`);
    if (numeric <= 0) throw fail(`invalid port: "${label}": port must be >0`);
    // A bare number: the client's own address is the one to use.
    return { Address: "", Port: numeric };
  }
  if (mode === "driver") throw fail(`cannot use address_mode="driver": no driver network exists`);
  if (mode === "alloc" || mode === "alloc_ipv6") {
    throw fail(`cannot use address_mode="alloc": no allocation network status reported`);
  }
  throw fail(`invalid address mode "${mode}"`);
}

/**
 * The registrations of one workload of the allocation: the group's services
 * (`task` undefined) or one task's, built as Nomad's client builds them.
 * Throws a ServiceAddressError when one address cannot be resolved: all or
 * nothing, as Nomad registers a workload.
 */
export function workloadRegistrations(
  alloc: SimServiceAlloc,
  node: SimNodeInfo,
  task?: string,
): ServiceRegistrationBody[] {
  const services =
    task === undefined ? alloc.GroupServices : (alloc.Tasks.find((t) => t.Name === task)?.Services ?? []);
  if (services.length === 0) return [];
  const workload = task ?? `group-${alloc.TaskGroup}`;
  const { Networking: networking } = alloc;
  const networks = task === undefined ? networking.groupNetworks : (networking.taskNetworks[task] ?? []);
  const env = taskEnv(alloc, node, task);
  return services.map((raw) => {
    const service = interpolated(raw, env);
    const { Address, Port } = serviceAddress(service, networks, networking, node.IP);
    const tags = alloc.Canary && service.CanaryTags.length > 0 ? service.CanaryTags : service.Tags;
    return {
      ID: allocServiceID(alloc.ID, workload, service),
      ServiceName: service.Name,
      Namespace: alloc.Namespace,
      NodeID: node.ID,
      Datacenter: node.Datacenter,
      JobID: alloc.JobID,
      AllocID: alloc.ID,
      Tags: [...tags],
      Address,
      Port,
    };
  });
}

/**
 * The part of Nomad's task environment a service block commonly
 * interpolates: the job, group, task and allocation, the node, and each
 * allocated port. Anything else is left as written, as taskenv.ReplaceEnv
 * leaves a variable it does not know.
 */
function taskEnv(alloc: SimServiceAlloc, node: SimNodeInfo, task: string | undefined): Map<string, string> {
  const index = /\[(\d+)\]$/.exec(alloc.Name)?.[1] ?? "0";
  const env = new Map<string, string>([
    ["NOMAD_ALLOC_ID", alloc.ID],
    ["NOMAD_SHORT_ALLOC_ID", alloc.ID.slice(0, 8)],
    ["NOMAD_ALLOC_NAME", alloc.Name],
    ["NOMAD_ALLOC_INDEX", index],
    ["NOMAD_JOB_ID", alloc.JobID],
    ["NOMAD_JOB_NAME", alloc.JobName],
    ["NOMAD_GROUP_NAME", alloc.TaskGroup],
    ["NOMAD_NAMESPACE", alloc.Namespace],
    ["NOMAD_DC", node.Datacenter],
    ["node.unique.id", node.ID],
    ["node.unique.name", node.Name],
    ["node.datacenter", node.Datacenter],
  ]);
  if (task !== undefined) env.set("NOMAD_TASK_NAME", task);
  for (const p of alloc.Networking.ports) {
    env.set(`NOMAD_IP_${p.Label}`, p.HostIP);
    env.set(`NOMAD_HOST_PORT_${p.Label}`, String(p.Value));
    env.set(`NOMAD_PORT_${p.Label}`, String(p.To > 0 ? p.To : p.Value));
    env.set(`NOMAD_ADDR_${p.Label}`, `${p.HostIP}:${p.Value}`);
  }
  return env;
}

function interpolated(service: SimService, env: ReadonlyMap<string, string>): SimService {
  const replace = (s: string) =>
    s.includes("${") ? s.replace(/\$\{([^}]+)\}/g, (whole, key: string) => env.get(key) ?? whole) : s;
  return {
    ...service,
    Name: replace(service.Name),
    PortLabel: replace(service.PortLabel),
    Tags: service.Tags.map(replace),
    CanaryTags: service.CanaryTags.map(replace),
  };
}
