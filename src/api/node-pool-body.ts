import {
  DEFAULT_NODE_IDENTITY_TTL_NS,
  type NodePoolSchedulerConfiguration,
  type NodePoolSpec,
  nodePoolNameError,
} from "../../streams/node-pools.ts";
import { formatErrors } from "../jobs/multierror.ts";
import { parseDuration } from "../util/duration.ts";
import { ApiError } from "./api-error.ts";

/** Nomad's NodePool as a client sends it (api.NodePool; the indexes are ignored). */
export interface NodePoolBody {
  Name?: string;
  Description?: string;
  Meta?: Record<string, string> | null;
  SchedulerConfiguration?: {
    SchedulerAlgorithm?: string;
    MemoryOversubscriptionEnabled?: boolean | null;
  } | null;
  /** The api package sends a Go duration string ("720h0m0s"); Nomad's server also takes nanoseconds. */
  NodeIdentityTTL?: string | number | null;
}

export const nodePoolBodySchema = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    Name: { type: "string" },
    Description: { type: "string" },
    Meta: { type: ["object", "null"], additionalProperties: { type: "string" } },
    SchedulerConfiguration: {
      type: ["object", "null"],
      additionalProperties: false,
      properties: {
        SchedulerAlgorithm: { type: "string" },
        MemoryOversubscriptionEnabled: { type: ["boolean", "null"] },
      },
    },
    NodeIdentityTTL: { anyOf: [{ type: "string" }, { type: "number" }, { type: "null" }] },
    Hash: {},
    CreateIndex: { type: "integer" },
    ModifyIndex: { type: "integer" },
  },
} as const;

const MAX_DESCRIPTION = 256;
const ALGORITHMS = new Set(["", "binpack", "spread"]);

/**
 * The pool a write asks for, canonicalized (Nomad's NodePool.Canonicalize:
 * the identity TTL defaults to 24h) and validated with Nomad's messages:
 * a 400 for anything wrong, before anything is written.
 */
export function nodePoolFromBody(body: NodePoolBody): NodePoolSpec {
  const name = body.Name ?? "";
  const description = body.Description ?? "";
  const config = body.SchedulerConfiguration ? schedulerConfiguration(body.SchedulerConfiguration) : null;
  const errors: string[] = [];
  const invalidName = nodePoolNameError(name);
  if (invalidName) errors.push(invalidName);
  if (description.length > MAX_DESCRIPTION) errors.push(`description longer than ${MAX_DESCRIPTION}`);
  if (config && !ALGORITHMS.has(config.SchedulerAlgorithm)) {
    errors.push(`invalid scheduler algorithm: ${config.SchedulerAlgorithm}`);
  }
  if (errors.length > 0) {
    throw ApiError.badRequest(`invalid node pool ${JSON.stringify(name)}: ${formatErrors(errors)}`);
  }
  return {
    Name: name,
    Description: description,
    Meta: body.Meta ?? null,
    SchedulerConfiguration: config,
    NodeIdentityTTL: identityTTL(body.NodeIdentityTTL) || DEFAULT_NODE_IDENTITY_TTL_NS,
  };
}

function schedulerConfiguration(
  c: NonNullable<NodePoolBody["SchedulerConfiguration"]>,
): NodePoolSchedulerConfiguration {
  return {
    SchedulerAlgorithm: c.SchedulerAlgorithm ?? "",
    MemoryOversubscriptionEnabled: c.MemoryOversubscriptionEnabled ?? null,
  };
}

/** Nanoseconds from a Go duration string or a number of nanoseconds; 0 when absent. */
function identityTTL(value: NodePoolBody["NodeIdentityTTL"]): number {
  if (value === undefined || value === null || value === "") return 0;
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw ApiError.badRequest(`invalid NodeIdentityTTL ${value}`);
    return value;
  }
  const ms = parseDuration(value);
  if (ms === undefined) throw ApiError.badRequest(`time: invalid duration ${JSON.stringify(value)}`);
  return Math.round(ms * 1e6);
}
