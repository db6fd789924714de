import { rm } from "node:fs/promises";
import { pino } from "pino";
import { createProjections } from "../../projections/index.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { HistoryStore } from "../../src/history/history-store.ts";
import { MemoryLog } from "../../src/log/memory-log.ts";
import type { Outcome } from "../../src/store/projection.ts";
import { Store } from "../../src/store/store.ts";
import { type Draft, writeEvents } from "../../src/store/writer.ts";
import { type AllocationSpec, newAllocation } from "../../streams/allocs.ts";
import { allSchemas } from "../../streams/index.ts";
import { NODE_REGISTERED_VERSION, type NodeSpec, type NodeStatus } from "../../streams/nodes.ts";
import { testJob } from "../api/node-fixtures.ts";

export const AT = 1_763_800_000_000;

/** A store over a memory log with every projection, for tests below the API. */
export async function memoryStore() {
  const projections = createProjections();
  const log = new MemoryLog();
  const store = new Store({
    log,
    codec: new EnvelopeCodec(allSchemas),
    projections: projections.all,
    logger: pino({ level: "silent" }),
  });
  // The real history store, in a directory removed at once: its open file
  // stays readable (Linux), and nothing is left behind by tests that never close.
  const history = await HistoryStore.open(undefined, pino({ level: "silent" }));
  await rm(history.file.dir, { recursive: true, force: true });
  history.attach(store, 0);
  await store.start();
  let at = AT;
  const write = async (...drafts: Draft[]): Promise<readonly Outcome[]> => {
    at += 1000;
    return (await writeEvents(store, at, { kind: "server", id: "test" }, drafts)).outcomes;
  };
  return { store, log, tables: projections.tables, write, history };
}

export function nodeSpec(id: string, fields: Partial<NodeSpec> = {}): NodeSpec {
  return {
    ID: id,
    Datacenter: "dc1",
    Name: id,
    HTTPAddr: "10.0.0.1:4646",
    TLSEnabled: false,
    Attributes: { "os.name": "linux" },
    NodeResources: null,
    ReservedResources: null,
    Resources: null,
    Reserved: null,
    Links: null,
    Meta: null,
    NodeClass: "",
    NodePool: "default",
    CgroupParent: "",
    ComputedClass: "v1:1",
    Drivers: null,
    CSIControllerPlugins: null,
    CSINodePlugins: null,
    HostVolumes: null,
    HostNetworks: null,
    Status: "initializing",
    StatusDescription: "",
    SchedulingEligibility: "eligible",
    ...fields,
  };
}

export const registered = (id: string, hash = "aa", fields: Partial<NodeSpec> = {}): Draft => ({
  type: "NodeRegistered",
  v: NODE_REGISTERED_VERSION,
  data: { Node: nodeSpec(id, fields), SecretIDHash: hash },
});

export const statusChange = (id: string, from: NodeStatus, to: NodeStatus): Draft => ({
  type: "NodeStatusUpdated",
  v: 1,
  data: { NodeID: id, Status: to, PreviousStatus: from, Cause: "heartbeat", NodeEvent: null },
});

export const placed = (...allocs: AllocationSpec[]): Draft => ({
  type: "AllocsPlanApplied",
  v: 1,
  data: { EvalID: "", Placed: allocs, Updated: [], Stopped: [], Preempted: [] },
});

export function alloc(id: string, nodeID: string, fields: Partial<AllocationSpec> = {}): AllocationSpec {
  return newAllocation({
    ID: id,
    Namespace: "default",
    JobID: "web",
    TaskGroup: "frontend",
    NodeID: nodeID,
    Job: testJob(),
    CreateTime: AT * 1e6,
    ...fields,
  });
}

export const clientUpdate = (id: string, nodeID: string, status: AllocationSpec["ClientStatus"]): Draft => ({
  type: "AllocClientUpdated",
  v: 1,
  data: {
    Allocs: [
      {
        ID: id,
        NodeID: nodeID,
        ClientStatus: status,
        ClientDescription: "",
        TaskStates: { web: { State: status === "running" ? "running" : "pending" } },
        DeploymentStatus: null,
        NetworkStatus: null,
        ModifyTime: AT * 1e6,
      },
    ],
  },
});
