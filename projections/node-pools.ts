import type { ApplyContext, Projection } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import type { ClusterEvent } from "../streams/cluster.ts";
import {
  DEFAULT_NODE_IDENTITY_TTL_NS,
  NODE_POOL_ALL,
  NODE_POOL_DEFAULT,
  type NodePoolEvent,
  type NodePoolSpec,
} from "../streams/node-pools.ts";
import type { NodeStreamEvent } from "../streams/nodes.ts";
import type { JobRow } from "./jobs.ts";
import type { NodeRow } from "./nodes.ts";

export type NodePoolRow = NodePoolSpec & { readonly CreateIndex: number; readonly ModifyIndex: number };

/** Nomad's region name: chronomad runs one region, Nomad's default. */
const REGION = "global";

/** Nomad's NodePool.IsBuiltIn: `all` and `default` always exist and never change. */
export function isBuiltInNodePool(name: string): boolean {
  return name === NODE_POOL_ALL || name === NODE_POOL_DEFAULT;
}

/** A pool as Nomad creates it for a node that names an unknown one (fetchOrCreateNodePoolTxn). */
export function bareNodePool(name: string): NodePoolSpec {
  return {
    Name: name,
    Description: "",
    Meta: null,
    SchedulerConfiguration: null,
    NodeIdentityTTL: DEFAULT_NODE_IDENTITY_TTL_NS,
  };
}

const BUILT_IN: readonly NodePoolSpec[] = [
  { ...bareNodePool(NODE_POOL_ALL), Description: "Node pool with all nodes in the cluster." },
  { ...bareNodePool(NODE_POOL_DEFAULT), Description: "Default node pool." },
];

/** What a pool delete must not leave behind: its nodes and live jobs (what Nomad looks up per region). */
export interface NodePoolUsers {
  readonly nodes: Table<NodeRow>;
  readonly jobs: Table<JobRow> | undefined;
}

/**
 * Why `names` cannot be deleted, in Nomad's order and words (DeleteNodePools:
 * the pools still in use, as a go-multierror list, then the state store's
 * refusals); undefined when they can.
 */
export function nodePoolDeleteRefusal(
  names: readonly string[],
  pools: Table<NodePoolRow>,
  users: NodePoolUsers,
): { readonly code: number; readonly message: string } | undefined {
  const errors: string[] = [];
  for (const name of names) {
    if (users.jobs?.by("pool", name).some((j) => j.Status !== "dead")) {
      errors.push(`node pool ${JSON.stringify(name)} has non-terminal jobs in regions: [${REGION}]`);
    }
    if (users.nodes.countBy("pool", name) > 0) {
      errors.push(`node pool ${JSON.stringify(name)} has nodes in regions: [${REGION}]`);
    }
  }
  if (errors.length > 0) return { code: 400, message: multiError(errors) };
  for (const name of names) {
    if (!pools.has(name)) return { code: 404, message: `node pool ${name} not found` };
    if (isBuiltInNodePool(name)) {
      return { code: 400, message: `deleting node pool ${JSON.stringify(name)} is not allowed` };
    }
  }
  return undefined;
}

/** go-multierror's format, which Nomad answers these refusals in. */
function multiError(errors: readonly string[]): string {
  const n = errors.length;
  return `${n} error${n === 1 ? "" : "s"} occurred:\n\t${errors.map((e) => `* ${e}`).join("\n\t")}\n\n`;
}

/**
 * Node pools: the two built-in ones from the cluster's first record, the
 * ones operators write, and the ones nodes bring when they register in a
 * pool nobody created (Nomad creates those in the node's own transaction).
 * Reads nodes and jobs to re-check at apply that a deleted pool is unused.
 */
export function nodePoolsProjection(deps: { readonly nodes: Table<NodeRow> }) {
  const pools = new Table<NodePoolRow>({ name: "node_pools", key: (p) => p.Name });
  const users: { nodes: Table<NodeRow>; jobs: Table<JobRow> | undefined } = {
    nodes: deps.nodes,
    jobs: undefined,
  };

  const put = (ctx: ApplyContext, spec: NodePoolSpec) => {
    const before = pools.get(spec.Name);
    ctx.put(pools, { ...spec, CreateIndex: before?.CreateIndex ?? ctx.index, ModifyIndex: ctx.index });
  };

  const projection: Projection = {
    name: "node_pools",
    version: 1,
    tables: [pools],
    // The cluster projection refuses a second bootstrap; the nodes projection
    // may refuse a registration: both before this one applies.
    reads: ["cluster", "nodes", "jobs"],
    handles: new Set(["ClusterBootstrapped", "NodePoolUpserted", "NodePoolDeleted", "NodeRegistered"]),
    evolve(ctx, event) {
      const e = event as NodePoolEvent | ClusterEvent | NodeStreamEvent;
      switch (e.type) {
        case "ClusterBootstrapped":
          if (ctx.rejected) return;
          for (const pool of BUILT_IN) if (!pools.has(pool.Name)) put(ctx, pool);
          return;
        case "NodeRegistered": {
          if (ctx.rejected) return;
          const name = e.data.Node.NodePool;
          if (!pools.has(name)) put(ctx, bareNodePool(name));
          return;
        }
        case "NodePoolUpserted": {
          const builtIn = e.data.NodePools.find((p) => isBuiltInNodePool(p.Name) && pools.has(p.Name));
          if (builtIn) {
            ctx.reject(400, `modifying node pool ${JSON.stringify(builtIn.Name)} is not allowed`);
            return;
          }
          for (const pool of e.data.NodePools) put(ctx, pool);
          return;
        }
        case "NodePoolDeleted": {
          // Validate twice: a node may have joined, or a job moved in, since the handler looked.
          const refusal = nodePoolDeleteRefusal(e.data.Names, pools, users);
          if (refusal) {
            ctx.reject(refusal.code, refusal.message);
            return;
          }
          for (const name of e.data.Names) ctx.delete(pools, name);
          ctx.touch(pools);
          return;
        }
        default:
          return;
      }
    },
  };

  return {
    projection,
    pools,
    /** Gives the projection the jobs table (built after it) for the delete check. */
    bind(jobs: Table<JobRow>) {
      users.jobs = jobs;
    },
  };
}
