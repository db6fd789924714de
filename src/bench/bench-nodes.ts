import { randomUUID } from "node:crypto";
import {
  NODE_REGISTERED_VERSION,
  type NodeRegistered,
  type NodeSpec,
  type NodeStatusUpdated,
} from "../../streams/nodes.ts";
import { computeNodeClass } from "../nodes/computed-class.ts";
import { hashNodeSecret } from "../nodes/node-secret.ts";
import type { Draft } from "../store/writer.ts";

/**
 * A registered, ready client node with room for plenty (8 GHz, 16 GiB,
 * docker), as two log drafts: benchmarks write nodes straight to the log
 * when no client process is needed to run them.
 */
export function readyNodeDrafts(
  i: number,
  networked = false,
): { readonly id: string; readonly drafts: Draft[] } {
  const plain = benchNode(randomUUID(), `bench-${i}`);
  const spec = networked ? withHostNetwork(plain, i) : plain;
  const registered: NodeRegistered = {
    Node: { ...spec, ComputedClass: computeNodeClass(spec) },
    SecretIDHash: hashNodeSecret(randomUUID()),
  };
  const ready: NodeStatusUpdated = {
    NodeID: spec.ID,
    Status: "ready",
    PreviousStatus: "initializing",
    Cause: "heartbeat",
    NodeEvent: null,
  };
  return {
    id: spec.ID,
    drafts: [
      { type: "NodeRegistered", v: NODE_REGISTERED_VERSION, data: registered },
      { type: "NodeStatusUpdated", v: 1, data: ready },
    ],
  };
}

/** A client node with room for 8,000 MHz, 16 GiB and 200 GB and the docker driver, as it registers. */
export function benchNode(id: string, name: string): NodeSpec {
  return {
    ID: id,
    Datacenter: "dc1",
    Name: name,
    HTTPAddr: "10.0.0.1:4646",
    TLSEnabled: false,
    Attributes: { "kernel.name": "linux", "os.name": "ubuntu", "nomad.version": "1.6.1" },
    NodeResources: { Cpu: { CpuShares: 8000 }, Memory: { MemoryMB: 16_384 }, Disk: { DiskMB: 200_000 } },
    ReservedResources: null,
    Resources: null,
    Reserved: null,
    Links: null,
    Meta: null,
    NodeClass: "",
    NodePool: "default",
    CgroupParent: "",
    ComputedClass: "",
    Drivers: { docker: { Detected: true, Healthy: true } },
    CSIControllerPlugins: null,
    CSINodePlugins: null,
    HostVolumes: null,
    HostNetworks: null,
    Status: "initializing",
    StatusDescription: "",
    SchedulingEligibility: "eligible",
  };
}

/** The node with the host network a client fingerprints (an address of its own, Nomad's default dynamic port range). */
export function withHostNetwork(spec: NodeSpec, i: number): NodeSpec {
  const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
  return {
    ...spec,
    NodeResources: {
      ...spec.NodeResources,
      Networks: [{ Mode: "host", Device: "eth0", CIDR: `${ip}/32`, IP: ip, MBits: 1000 }],
      NodeNetworks: [
        {
          Mode: "host",
          Device: "eth0",
          Speed: 1000,
          Addresses: [{ Family: "ipv4", Alias: "default", Address: ip, ReservedPorts: "", Gateway: "" }],
        },
      ],
      MinDynamicPort: 20_000,
      MaxDynamicPort: 32_000,
    },
    ReservedResources: { Networks: { ReservedHostPorts: "22" } },
  };
}
