import { csiFingerprints } from "./csi-plugins.ts";

/** What every simulated node looks like to the scheduler. */
export interface NodeShape {
  readonly namePrefix: string;
  readonly datacenter: string;
  readonly nodeClass: string;
  /** MHz (Nomad's CpuShares). */
  readonly cpu: number;
  readonly cores: number;
  readonly memoryMB: number;
  readonly diskMB: number;
  /** Task drivers the node reports detected and healthy. */
  readonly drivers: readonly string[];
  /** IDs of the CSI plugins the node runs a node plugin of (Nomad's CSINodePlugins). */
  readonly csiNodePlugins: readonly string[];
  /** IDs of the CSI plugins the node runs a controller plugin of (Nomad's CSIControllerPlugins). */
  readonly csiControllerPlugins: readonly string[];
}

export const DEFAULT_SHAPE: NodeShape = {
  namePrefix: "sim",
  datacenter: "dc1",
  nodeClass: "",
  cpu: 8_000,
  cores: 4,
  memoryMB: 16_384,
  diskMB: 102_400,
  drivers: ["docker", "exec", "raw_exec", "mock_driver"],
  csiNodePlugins: [],
  csiControllerPlugins: [],
};

/** The host network address of the simulated node with this index. */
export function nodeIP(index: number): string {
  return `10.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`;
}

/**
 * The Node struct a simulated client registers, shaped like a Nomad 1.x
 * client's fingerprint: attributes, NodeResources, drivers and one host
 * network with an address derived from the node's index.
 */
export function nodeBody(
  node: { readonly id: string; readonly secret: string; readonly name: string; readonly index: number },
  shape: NodeShape,
  /** RFC 3339: when its plugins were fingerprinted. */
  now = "0001-01-01T00:00:00Z",
): Record<string, unknown> {
  const ip = nodeIP(node.index);
  const attributes: Record<string, string> = {
    "kernel.name": "linux",
    "kernel.version": "6.1.0",
    "os.name": "ubuntu",
    "os.version": "22.04",
    arch: "amd64",
    "cpu.arch": "amd64",
    "cpu.numcores": String(shape.cores),
    "cpu.totalcompute": String(shape.cpu),
    "memory.totalbytes": String(shape.memoryMB * 1024 * 1024),
    "nomad.version": "1.9.0",
    "unique.hostname": node.name,
    "unique.network.ip-address": ip,
    // Its native service discovery is on (a client's default), as jobs with nomad services require.
    "nomad.service_discovery": "true",
  };
  const drivers: Record<string, unknown> = {};
  for (const d of shape.drivers) {
    attributes[`driver.${d}`] = "1";
    drivers[d] = {
      Detected: true,
      Healthy: true,
      HealthDescription: "Healthy",
      Attributes: { [`driver.${d}`]: "1" },
    };
  }
  return {
    ID: node.id,
    SecretID: node.secret,
    Datacenter: shape.datacenter,
    Name: node.name,
    HTTPAddr: `${ip}:4646`,
    TLSEnabled: false,
    Attributes: attributes,
    NodeResources: {
      Cpu: { CpuShares: shape.cpu, TotalCpuCores: shape.cores },
      Memory: { MemoryMB: shape.memoryMB },
      Disk: { DiskMB: shape.diskMB },
      // As Nomad's client fingerprints them: the default interface, and the bridge network mode.
      Networks: [
        { Mode: "host", Device: "eth0", CIDR: `${ip}/32`, IP: ip, MBits: 1000 },
        { Mode: "bridge", Device: "", CIDR: "", IP: "", MBits: 0 },
      ],
      NodeNetworks: [
        {
          Mode: "host",
          Device: "eth0",
          MacAddress: "",
          Speed: 1000,
          Addresses: [{ Family: "ipv4", Alias: "default", Address: ip, ReservedPorts: "", Gateway: "" }],
        },
        { Mode: "bridge", Device: "", MacAddress: "", Speed: 0, Addresses: null },
      ],
      MinDynamicPort: 20_000,
      MaxDynamicPort: 32_000,
    },
    ReservedResources: {
      Cpu: { CpuShares: 0 },
      Memory: { MemoryMB: 0 },
      Disk: { DiskMB: 0 },
      Networks: { ReservedHostPorts: "" },
    },
    Links: null,
    Meta: { "sim.index": String(node.index) },
    NodeClass: shape.nodeClass,
    Drivers: drivers,
    ...csiFingerprints(node.id, { node: shape.csiNodePlugins, controller: shape.csiControllerPlugins }, now),
    Status: "initializing",
    SchedulingEligibility: "eligible",
  };
}
