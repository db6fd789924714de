import type { NodeRow } from "../../../projections/nodes.ts";
import { NODE_POOL_ALL, NODE_POOL_DEFAULT, nodePoolNameError } from "../../../streams/node-pools.ts";
import {
  NODE_REGISTERED_VERSION,
  NODE_STATUSES,
  type NodeRegistered,
  type NodeSpec,
  type NodeStatus,
  type SchedulingEligibility,
} from "../../../streams/nodes.ts";
import { nodeIdentity } from "../../auth/node-identity.ts";
import { computeNodeClass } from "../../nodes/computed-class.ts";
import { evalsForNode, statusChangeNeedsEvals } from "../../nodes/node-evals.ts";
import { hashNodeSecret, nodeSecretMatches } from "../../nodes/node-secret.ts";
import { ApiError } from "../api-error.ts";
import { commit, type Draft } from "../commit.ts";
import { nodeUpdateResponse } from "../node-responses.ts";
import { presentedNodeSecret } from "./node-auth.ts";
import { notLeader, type RpcHandler } from "./rpc-context.ts";
import type { NodeBody, RegisterBody } from "./schemas.ts";

const NOT_REGISTERING = "node secret ID does not match. Not registering node.";

/**
 * Node.Register: the one call that introduces a node's SecretID (trust on
 * first use). A known node must present the secret it registered with, and
 * keeps its status: only heartbeats change it (Nomad PR 15808).
 */
export const register: RpcHandler = async ({ api }, request) => {
  const body = (request.body ?? {}) as RegisterBody;
  const n = validate(body.Node);
  const presented = presentedNodeSecret(request, body.AuthToken);
  if (presented !== undefined && presented !== n.SecretID) throw ApiError.forbidden(NOT_REGISTERING);
  const original = api.tables.nodes.get(n.ID);
  if (original) {
    const stored = api.tables.nodeSecrets.get(n.ID);
    if (stored && !nodeSecretMatches(n.SecretID, stored.SecretIDHash))
      throw ApiError.forbidden(NOT_REGISTERING);
  }
  if (!api.heartbeats.active) throw notLeader();

  const spec = toSpec(n);
  const data: NodeRegistered = { Node: spec, SecretIDHash: hashNodeSecret(n.SecretID) };
  // A pool nobody created yet is created by the projection of this record, as Nomad does.
  const drafts: Draft[] = [{ type: "NodeRegistered", v: NODE_REGISTERED_VERSION, data }];
  const status = original?.Status ?? spec.Status;
  const evals =
    status === "down" || shouldCreateNodeEval(original, spec, status)
      ? evalsForNode(
          api.tables,
          {
            ID: n.ID,
            ModifyIndex: original?.ModifyIndex ?? 0,
            Datacenter: spec.Datacenter,
            NodePool: spec.NodePool,
          },
          api.clock.now(),
        )
      : [];
  if (evals.length > 0) drafts.push({ type: "EvaluationsUpserted", v: 1, data: { Evals: evals } });
  const index = await commit(api, nodeIdentity(spec), drafts);
  const nodeIndex = index - (drafts.length - 1);

  const node = api.tables.nodes.get(n.ID);
  const ttl = node && node.Status !== "down" ? api.heartbeats.reset(n.ID) : undefined;
  return nodeUpdateResponse(api, {
    heartbeatTtlMs: ttl ?? 0,
    evalIDs: evals.map((e) => e.ID),
    evalCreateIndex: evals.length > 0 ? index : 0,
    nodeModifyIndex: nodeIndex,
    schedulingEligibility: node?.SchedulingEligibility ?? spec.SchedulingEligibility,
    index,
  });
};

type ValidNode = NodeBody & {
  ID: string;
  SecretID: string;
  Datacenter: string;
  Name: string;
  Attributes: Record<string, string>;
};

/** Nomad's Register checks, with its messages. */
function validate(node: NodeBody | null | undefined): ValidNode {
  if (!node) throw ApiError.badRequest("missing node for client registration");
  if (!node.ID) throw ApiError.badRequest("missing node ID for client registration");
  if (!node.Datacenter) throw ApiError.badRequest("missing datacenter for client registration");
  if (!node.Name) throw ApiError.badRequest("missing node name for client registration");
  if (!node.Attributes || Object.keys(node.Attributes).length === 0) {
    throw ApiError.badRequest("missing attributes for client registration");
  }
  if (!node.SecretID) throw ApiError.badRequest("missing node secret ID for client registration");
  if (node.NodePool) {
    const invalid = nodePoolNameError(node.NodePool);
    if (invalid) throw ApiError.badRequest(`invalid node pool: ${invalid}`);
    if (node.NodePool === NODE_POOL_ALL) {
      throw ApiError.badRequest(`node is not allowed to register in node pool "${NODE_POOL_ALL}"`);
    }
  }
  if (node.Status && !NODE_STATUSES.includes(node.Status as NodeStatus))
    throw ApiError.badRequest("invalid status for node");
  const eligibility = node.SchedulingEligibility;
  if (eligibility && eligibility !== "eligible" && eligibility !== "ineligible") {
    throw ApiError.badRequest(`invalid scheduling eligibility ${JSON.stringify(eligibility)}`);
  }
  return node as ValidNode;
}

/**
 * The spec the record carries, field by field in the order of NodeSpec's
 * keys in projections/node-row.ts (the projection builds its row by a
 * literal when they come in that order). A spread of a base object here
 * took V8's slow path: 15–25 µs a registration.
 */
function toSpec(n: ValidNode): NodeSpec {
  const NodeClass = n.NodeClass ?? "";
  const NodePool = n.NodePool || NODE_POOL_DEFAULT;
  const Meta = n.Meta ?? null;
  const NodeResources = n.NodeResources ?? null;
  return {
    ID: n.ID,
    Datacenter: n.Datacenter,
    Name: n.Name,
    HTTPAddr: n.HTTPAddr ?? "",
    TLSEnabled: n.TLSEnabled ?? false,
    Attributes: n.Attributes,
    NodeResources,
    ReservedResources: n.ReservedResources ?? null,
    Resources: n.Resources ?? null,
    Reserved: n.Reserved ?? null,
    Links: n.Links ?? null,
    Meta,
    NodeClass,
    NodePool,
    CgroupParent: n.CgroupParent ?? "",
    ComputedClass: computeNodeClass({
      Datacenter: n.Datacenter,
      NodeClass,
      Attributes: n.Attributes,
      Meta,
      NodeResources,
      NodePool,
    }),
    Drivers: n.Drivers ?? null,
    CSIControllerPlugins: n.CSIControllerPlugins ?? null,
    CSINodePlugins: n.CSINodePlugins ?? null,
    HostVolumes: n.HostVolumes ?? null,
    HostNetworks: n.HostNetworks ?? null,
    Status: (n.Status || "initializing") as NodeStatus,
    StatusDescription: n.StatusDescription ?? "",
    SchedulingEligibility: (n.SchedulingEligibility || "eligible") as SchedulingEligibility,
  };
}

/**
 * Nomad's shouldCreateNodeEval: a new node only by its status; a known one
 * when its status moves or a field the scheduler's feasibility checks read
 * changes (resources alone do not: blocked evaluations handle capacity).
 */
function shouldCreateNodeEval(original: NodeRow | undefined, updated: NodeSpec, status: NodeStatus): boolean {
  if (!original) return statusChangeNeedsEvals(status, "initializing");
  if (statusChangeNeedsEvals(status, original.Status)) return true;
  return (
    original.Datacenter !== updated.Datacenter ||
    original.Name !== updated.Name ||
    original.NodeClass !== updated.NodeClass ||
    !sameJson(original.Attributes, updated.Attributes) ||
    !sameJson(original.Meta ?? {}, updated.Meta ?? {}) ||
    !sameJson(original.Drivers ?? {}, updated.Drivers ?? {}) ||
    !sameJson(original.HostVolumes ?? {}, updated.HostVolumes ?? {}) ||
    !sameJson(original.NodeResources?.Devices ?? null, updated.NodeResources?.Devices ?? null)
  );
}

function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object") {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}
