import type { NodeSpec } from "../streams/nodes.ts";
import { hasKeysInOrder } from "./keys-in-order.ts";
import type { NodeRow } from "./nodes.ts";

/*
 * Node rows built field by field. A node row has 32 fields; `{ ...spec,
 * StatusUpdatedAt: …, … }` and `{ ...node, Status: … }` took V8's slow path
 * (a spread of that many properties followed by more, and decoded records'
 * objects are dictionaries): 20–30 µs each, more than the rest of a
 * registration's apply. A literal naming every field costs well under a
 * microsecond. The fields keep the order the spread gave, so rows (their
 * JSON, their msgpack in snapshots and state hashes) are unchanged: the
 * literal is used only when the source has exactly the expected fields in
 * the expected order, which every writer's spec and every row built here
 * has; anything else (a record of another shape) is still spread.
 */

/** NodeSpec's fields, in the order Node.Register writes them. */
const SPEC_KEYS = [
  "ID",
  "Datacenter",
  "Name",
  "HTTPAddr",
  "TLSEnabled",
  "Attributes",
  "NodeResources",
  "ReservedResources",
  "Resources",
  "Reserved",
  "Links",
  "Meta",
  "NodeClass",
  "NodePool",
  "CgroupParent",
  "ComputedClass",
  "Drivers",
  "CSIControllerPlugins",
  "CSINodePlugins",
  "HostVolumes",
  "HostNetworks",
  "Status",
  "StatusDescription",
  "SchedulingEligibility",
] as const satisfies readonly (keyof NodeSpec)[];

/** A row's fields: the spec's, then the server's, in the order register() adds them. */
const ROW_KEYS = [
  ...SPEC_KEYS,
  "StatusUpdatedAt",
  "Events",
  "DrainStrategy",
  "LastDrain",
  "LastMissedHeartbeatIndex",
  "LastAllocUpdateIndex",
  "CreateIndex",
  "ModifyIndex",
] as const satisfies readonly (keyof NodeRow)[];

/** The fields a row has beside its spec's (and the two it overrides), as register() sets them. */
export type ServerFields = Omit<NodeRow, Exclude<keyof NodeSpec, "Status" | "SchedulingEligibility">>;

/** `{ ...spec, ...server }`: Status and SchedulingEligibility keep the spec's places. */
export function nodeRowFromSpec(spec: NodeSpec, s: ServerFields): NodeRow {
  if (!hasKeysInOrder(spec, SPEC_KEYS)) return { ...spec, ...s };
  return {
    ID: spec.ID,
    Datacenter: spec.Datacenter,
    Name: spec.Name,
    HTTPAddr: spec.HTTPAddr,
    TLSEnabled: spec.TLSEnabled,
    Attributes: spec.Attributes,
    NodeResources: spec.NodeResources,
    ReservedResources: spec.ReservedResources,
    Resources: spec.Resources,
    Reserved: spec.Reserved,
    Links: spec.Links,
    Meta: spec.Meta,
    NodeClass: spec.NodeClass,
    NodePool: spec.NodePool,
    CgroupParent: spec.CgroupParent,
    ComputedClass: spec.ComputedClass,
    Drivers: spec.Drivers,
    CSIControllerPlugins: spec.CSIControllerPlugins,
    CSINodePlugins: spec.CSINodePlugins,
    HostVolumes: spec.HostVolumes,
    HostNetworks: spec.HostNetworks,
    Status: s.Status,
    StatusDescription: spec.StatusDescription,
    SchedulingEligibility: s.SchedulingEligibility,
    StatusUpdatedAt: s.StatusUpdatedAt,
    Events: s.Events,
    DrainStrategy: s.DrainStrategy,
    LastDrain: s.LastDrain,
    LastMissedHeartbeatIndex: s.LastMissedHeartbeatIndex,
    LastAllocUpdateIndex: s.LastAllocUpdateIndex,
    CreateIndex: s.CreateIndex,
    ModifyIndex: s.ModifyIndex,
  };
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * A copy of `node` to change before it is put: `{ ...node }`, field by
 * field. Assigning a field the row has keeps its place, as
 * `{ ...node, Field: value }` did.
 */
export function copyNodeRow(node: NodeRow): Mutable<NodeRow> {
  if (!hasKeysInOrder(node, ROW_KEYS)) return { ...node };
  return {
    ID: node.ID,
    Datacenter: node.Datacenter,
    Name: node.Name,
    HTTPAddr: node.HTTPAddr,
    TLSEnabled: node.TLSEnabled,
    Attributes: node.Attributes,
    NodeResources: node.NodeResources,
    ReservedResources: node.ReservedResources,
    Resources: node.Resources,
    Reserved: node.Reserved,
    Links: node.Links,
    Meta: node.Meta,
    NodeClass: node.NodeClass,
    NodePool: node.NodePool,
    CgroupParent: node.CgroupParent,
    ComputedClass: node.ComputedClass,
    Drivers: node.Drivers,
    CSIControllerPlugins: node.CSIControllerPlugins,
    CSINodePlugins: node.CSINodePlugins,
    HostVolumes: node.HostVolumes,
    HostNetworks: node.HostNetworks,
    Status: node.Status,
    StatusDescription: node.StatusDescription,
    SchedulingEligibility: node.SchedulingEligibility,
    StatusUpdatedAt: node.StatusUpdatedAt,
    Events: node.Events,
    DrainStrategy: node.DrainStrategy,
    LastDrain: node.LastDrain,
    LastMissedHeartbeatIndex: node.LastMissedHeartbeatIndex,
    LastAllocUpdateIndex: node.LastAllocUpdateIndex,
    CreateIndex: node.CreateIndex,
    ModifyIndex: node.ModifyIndex,
  };
}

/** For toSpec: the same order, so the spec Node.Register writes passes hasKeysInOrder. */
export const NODE_SPEC_KEYS: readonly string[] = SPEC_KEYS;
