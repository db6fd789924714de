import { type Envelope, schemas } from "./event-schema.ts";

/** Nomad's NodePoolSchedulerConfiguration: a pool's own scheduler settings, over the cluster's. */
export interface NodePoolSchedulerConfiguration {
  /** binpack, spread, or "" for the cluster's algorithm. */
  readonly SchedulerAlgorithm: string;
  /** null: the cluster's setting applies. */
  readonly MemoryOversubscriptionEnabled: boolean | null;
}

/** Nomad's NodePool as the API shows it (without the indexes and the replication Hash). */
export interface NodePoolSpec {
  readonly Name: string;
  readonly Description: string;
  readonly Meta: Readonly<Record<string, string>> | null;
  readonly SchedulerConfiguration: NodePoolSchedulerConfiguration | null;
  /** Nanoseconds (Go time.Duration), as Nomad's server encodes it. */
  readonly NodeIdentityTTL: number;
}

/** NodePool.UpsertNodePools; built-in pools are refused. */
export interface NodePoolUpserted {
  readonly NodePools: readonly NodePoolSpec[];
}

/** NodePool.DeleteNodePools; applied only while no node and no live job uses the pools. */
export interface NodePoolDeleted {
  readonly Names: readonly string[];
}

export type NodePoolEvent =
  | Envelope<"NodePoolUpserted", NodePoolUpserted>
  | Envelope<"NodePoolDeleted", NodePoolDeleted>;

export const nodePoolSchemas = schemas(
  { type: "NodePoolUpserted", version: 1 },
  { type: "NodePoolDeleted", version: 1 },
);

/** Nomad's NodePoolAll: every node is in it; nothing registers into it. */
export const NODE_POOL_ALL = "all";
/** Nomad's NodePoolDefault: where nodes and jobs go when they name no pool. */
export const NODE_POOL_DEFAULT = "default";

/** Nomad's DefaultNodePoolNodeIdentityTTL (24h), for pools created without one. */
export const DEFAULT_NODE_IDENTITY_TTL_NS = 24 * 3_600 * 1e9;

/** Nomad's validNodePoolName. */
export const NODE_POOL_NAME = /^[a-zA-Z0-9-_]{1,128}$/;

/** Nomad's ValidateNodePoolName error, or undefined when `name` is valid. */
export function nodePoolNameError(name: string): string | undefined {
  return NODE_POOL_NAME.test(name)
    ? undefined
    : `invalid name ${JSON.stringify(name)}, must match regex ${NODE_POOL_NAME.source}`;
}

/** Nomad's Node.IsInPool: the pool `all` holds every node. A node or job naming no pool is in `default`. */
export function inNodePool(pool: string | undefined, nodePool: string | undefined): boolean {
  const want = pool || NODE_POOL_DEFAULT;
  return want === NODE_POOL_ALL || want === (nodePool || NODE_POOL_DEFAULT);
}
