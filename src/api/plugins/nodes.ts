import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { goTime } from "../../../projections/go-time.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { type EvaluationSpec, ZERO_TIME } from "../../../streams/evals.ts";
import type {
  DrainStrategy,
  NodeDeregistered,
  NodeDrainUpdated,
  NodeEligibilityUpdated,
  SchedulingEligibility,
} from "../../../streams/nodes.ts";
import { evalsForNode } from "../../nodes/node-evals.ts";
import { idTokenizer, paginateInSlices, parseListQuery } from "../../query/paginator.ts";
import { queryBool } from "../../query/query-bool.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import { commit, type Draft } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { badRequestOnQueryError } from "../list-pages.ts";
import { nodeUpdateResponse } from "../node-responses.ts";
import { allocsIndex, nodeStub, nodeView, resolveNode } from "../node-views.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, idParam, textQuery } from "../request-schemas.ts";

const listQuery = textQuery(
  "prefix",
  "filter",
  "per_page",
  "next_token",
  "resources",
  "os",
  ...COMMON_READ_PARAMS,
);

/** A single node's reads: its ID, and blocking-query parameters. */
const oneNode = { params: idParam, querystring: textQuery(...COMMON_READ_PARAMS) } as const;

/** Nomad's api.NodeUpdateDrainRequest. */
const drainBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    NodeID: { type: "string" },
    DrainSpec: {
      type: ["object", "null"],
      additionalProperties: false,
      properties: { Deadline: { type: "integer" }, IgnoreSystemJobs: { type: "boolean" } },
    },
    MarkEligible: { type: "boolean" },
    Meta: { type: ["object", "null"], additionalProperties: { type: "string" } },
  },
} as const;

/** Nomad's api.NodeUpdateEligibilityRequest. */
const eligibilityBody = {
  type: "object",
  additionalProperties: false,
  required: ["Eligibility"],
  properties: { NodeID: { type: "string" }, Eligibility: { type: "string" } },
} as const;

interface DrainBody {
  NodeID?: string;
  DrainSpec?: { Deadline?: number; IgnoreSystemJobs?: boolean } | null;
  MarkEligible?: boolean;
  Meta?: Record<string, string> | null;
}

const NODE_WRITE: ("PUT" | "POST")[] = ["PUT", "POST"];

/** `/v1/nodes` and `/v1/node/:id[/...]`, as in Nomad. */
export const nodesPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const canRead = (request: FastifyRequest) => {
    if (!request.identity.allows("", "node:read")) throw ApiError.forbidden();
  };
  const canWrite = (request: FastifyRequest) => {
    if (!request.identity.allows("", "node:write")) throw ApiError.forbidden();
  };
  // Writes always see the live tables (at_index is refused for them); reads may see the past.
  const nodeParam = (request: FastifyRequest) =>
    resolveNode(request.view.tables.nodes, (request.params as { id: string }).id);

  app.get("/v1/nodes", { schema: { querystring: listQuery } }, async (request, reply) => {
    canRead(request);
    const { nodes } = request.view.tables;
    const q = request.query as Record<string, string | undefined>;
    const fields = { resources: queryBool(q, "resources") ?? false, os: queryBool(q, "os") ?? false };
    const prefix = q.prefix ?? "";
    return blockingQuery(ctx, request, reply, ["nodes"], async () => {
      const page = await badRequestOnQueryError(() =>
        paginateInSlices(nodes.withPrefix(prefix), {
          ...parseListQuery(q),
          tokenizer: idTokenizer,
          seek: (id) => nodes.withPrefix(prefix, id),
        }),
      );
      return {
        index: nodes.index,
        body: page.items.map((n) => nodeStub(n, fields)),
        nextToken: page.nextToken,
      };
    });
  });

  app.get("/v1/node/:id", { schema: oneNode }, async (request, reply) => {
    canRead(request);
    const { nodes } = request.view.tables;
    const { id } = request.params as { id: string };
    const body = await blockingQuery(ctx, request, reply, ["nodes"], () => {
      const row = findNode(nodes, id);
      return { index: row?.ModifyIndex ?? nodes.index, body: row ? nodeView(row) : null };
    });
    if (!body) throw ApiError.notFound("node not found");
    return body;
  });

  // Nomad's Node.GetAllocs: the allocations placed on that exact node ID,
  // those of namespaces the caller may read. It never looks the node up: an
  // unknown node has no allocations, `[]`, not a 404.
  app.get("/v1/node/:id/allocations", { schema: oneNode }, async (request, reply) => {
    canRead(request);
    const { id } = request.params as { id: string };
    const { allocs } = request.view.tables;
    return blockingQuery(ctx, request, reply, ["allocs"], () => {
      const rows = allocs.by("node", id);
      const readable = rows.filter((a) => request.identity.allows(a.Namespace, "read-job"));
      // Floored at 1 as Nomad floors it ("must provide non-zero index to prevent blocking").
      return { index: Math.max(1, allocsIndex(rows, allocs.index)), body: readable };
    });
  });

  app.route({
    method: NODE_WRITE,
    url: "/v1/node/:id/drain",
    schema: { params: idParam, body: drainBody },
    handler: async (request, reply) => {
      canWrite(request);
      const node = nodeParam(request);
      const body = (request.body ?? {}) as DrainBody;
      if (body.NodeID && body.NodeID !== node.ID)
        throw ApiError.badRequest("node ID in the body does not match the path");
      const now = ctx.clock.now();
      let strategy: DrainStrategy | null = null;
      if (body.DrainSpec) {
        const deadline = body.DrainSpec.Deadline ?? 0;
        strategy = {
          DrainSpec: { Deadline: deadline, IgnoreSystemJobs: body.DrainSpec.IgnoreSystemJobs ?? false },
          ForceDeadline: deadline > 0 ? goTime(now + deadline / 1e6) : ZERO_TIME,
          StartedAt: node.DrainStrategy?.StartedAt ?? goTime(now),
        };
      }
      const message = !strategy
        ? "Node drain disabled"
        : node.DrainStrategy
          ? "Node drain strategy updated"
          : "Node drain strategy set";
      const data: NodeDrainUpdated = {
        NodeID: node.ID,
        DrainStrategy: strategy,
        MarkEligible: body.MarkEligible ?? false,
        Meta: body.Meta ?? null,
        AccessorID: request.identity.actor.kind === "token" ? request.identity.actor.id : "",
        NodeEvent: { Message: message, Subsystem: "Drain", Details: null, Timestamp: goTime(now) },
      };
      const drafts: Draft[] = [{ type: "NodeDrainUpdated", v: 1, data }];
      const evals =
        node.SchedulingEligibility === "ineligible" && data.MarkEligible && !strategy
          ? evalsForNode(ctx.tables, node, now)
          : [];
      const answer = await writeWithEvals(ctx, request, drafts, evals);
      reply.header("X-Nomad-Index", String(answer.Index));
      return answer;
    },
  });

  app.route({
    method: NODE_WRITE,
    url: "/v1/node/:id/eligibility",
    schema: { params: idParam, body: eligibilityBody },
    handler: async (request, reply) => {
      canWrite(request);
      const node = nodeParam(request);
      const { Eligibility, NodeID } = request.body as { Eligibility: string; NodeID?: string };
      if (NodeID && NodeID !== node.ID)
        throw ApiError.badRequest("node ID in the body does not match the path");
      if (Eligibility !== "eligible" && Eligibility !== "ineligible") {
        throw ApiError.badRequest(`invalid scheduling eligibility ${JSON.stringify(Eligibility)}`);
      }
      if (node.DrainStrategy !== null && Eligibility === "eligible") {
        throw ApiError.badRequest(
          "can not set node's scheduling eligibility to eligible while it is draining",
        );
      }
      if (node.SchedulingEligibility === Eligibility) {
        // Nomad writes nothing for a no-op and answers index 0.
        reply.header("X-Nomad-Index", "0");
        return { NodeModifyIndex: 0, EvalIDs: null, EvalCreateIndex: 0, Index: 0 };
      }
      const now = ctx.clock.now();
      const data: NodeEligibilityUpdated = {
        NodeID: node.ID,
        Eligibility: Eligibility as SchedulingEligibility,
        NodeEvent: {
          Message: `Node marked as ${Eligibility} for scheduling`,
          Subsystem: "Cluster",
          Details: null,
          Timestamp: goTime(now),
        },
      };
      const evals = Eligibility === "eligible" ? evalsForNode(ctx.tables, node, now) : [];
      const answer = await writeWithEvals(
        ctx,
        request,
        [{ type: "NodeEligibilityUpdated", v: 1, data }],
        evals,
      );
      reply.header("X-Nomad-Index", String(answer.Index));
      return answer;
    },
  });

  app.route({
    method: NODE_WRITE,
    url: "/v1/node/:id/evaluate",
    schema: { params: idParam },
    handler: async (request, reply) => {
      canWrite(request);
      const node = nodeParam(request);
      const evals = evalsForNode(ctx.tables, node, ctx.clock.now());
      let index = 0;
      if (evals.length > 0) {
        index = await commit(ctx, request.identity, [
          { type: "EvaluationsUpserted", v: 1, data: { Evals: evals } },
        ]);
      }
      reply.header("X-Nomad-Index", String(index));
      return nodeUpdateResponse(ctx, { evalIDs: evals.map((e) => e.ID), evalCreateIndex: index, index });
    },
  });

  app.route({
    method: NODE_WRITE,
    url: "/v1/node/:id/purge",
    schema: { params: idParam },
    handler: async (request, reply) => {
      canWrite(request);
      const node = nodeParam(request);
      const data: NodeDeregistered = { NodeIDs: [node.ID] };
      const evals = evalsForNode(ctx.tables, node, ctx.clock.now());
      const answer = await writeWithEvals(ctx, request, [{ type: "NodeDeregistered", v: 1, data }], evals);
      reply.header("X-Nomad-Index", String(answer.Index));
      return nodeUpdateResponse(ctx, {
        evalIDs: answer.EvalIDs ?? [],
        evalCreateIndex: answer.EvalCreateIndex,
        nodeModifyIndex: answer.NodeModifyIndex,
        index: answer.Index,
      });
    },
  });

  for (const action of ["drain", "eligibility", "evaluate", "purge"]) {
    refuseOtherMethods(app, `/v1/node/:id/${action}`, NODE_WRITE);
  }
  for (const url of ["/v1/nodes", "/v1/node/:id", "/v1/node/:id/allocations"])
    refuseOtherMethods(app, url, ["GET"]);
};

/** A node by exact ID or unique prefix, or undefined (for blocking reads, which answer 404 at the end). */
function findNode(nodes: ApiContext["tables"]["nodes"], id: string): NodeRow | undefined {
  try {
    return resolveNode(nodes, id);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return undefined;
    throw err;
  }
}

interface NodeWriteAnswer {
  NodeModifyIndex: number;
  EvalIDs: string[] | null;
  EvalCreateIndex: number;
  Index: number;
}

/** Appends a node change and the evaluations it causes as one batch; answers with Nomad's node write response. */
async function writeWithEvals(
  ctx: ApiContext,
  request: FastifyRequest,
  drafts: Draft[],
  evals: readonly EvaluationSpec[],
): Promise<NodeWriteAnswer> {
  const all =
    evals.length > 0 ? [...drafts, { type: "EvaluationsUpserted", v: 1, data: { Evals: evals } }] : drafts;
  const index = await commit(ctx, request.identity, all);
  const nodeIndex = index - (all.length - drafts.length);
  return {
    NodeModifyIndex: nodeIndex,
    EvalIDs: evals.length > 0 ? evals.map((e) => e.ID) : null,
    EvalCreateIndex: evals.length > 0 ? index : 0,
    Index: index,
  };
}
