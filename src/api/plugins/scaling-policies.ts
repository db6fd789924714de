import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { jobKey } from "../../../projections/evals.ts";
import type { ScalingPolicyRow } from "../../../projections/scaling.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import type { ApiContext } from "../context.ts";
import { ALL_NAMESPACES } from "../list-pages.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, idParam, textQuery } from "../request-schemas.ts";
import { requestNamespace } from "../write-answer.ts";

const listQuery = textQuery("namespace", "prefix", "job", "type", ...COMMON_READ_PARAMS);
const readQuery = textQuery("namespace", ...COMMON_READ_PARAMS);

type Query = Record<string, string | undefined>;

/** Nomad's ScalingPolicyListStub. */
function stub(p: ScalingPolicyRow): Record<string, unknown> {
  return {
    ID: p.ID,
    Enabled: p.Enabled,
    Type: p.Type,
    Target: p.Target,
    CreateIndex: p.CreateIndex,
    ModifyIndex: p.ModifyIndex,
  };
}

/** memdb's target index order: namespace, job, group, task. */
function byTarget(a: ScalingPolicyRow, b: ScalingPolicyRow): number {
  for (const k of ["Namespace", "Job", "Group", "Task"]) {
    const x = a.Target[k] ?? "";
    const y = b.Target[k] ?? "";
    if (x !== y) return x < y ? -1 : 1;
  }
  return a.Type < b.Type ? -1 : a.Type > b.Type ? 1 : 0;
}

const byID = (a: ScalingPolicyRow, b: ScalingPolicyRow) => (a.ID < b.ID ? -1 : a.ID > b.ID ? 1 : 0);

/**
 * `/v1/scaling/policies` and `/v1/scaling/policy/:id` (Nomad's Scaling
 * endpoint): the task groups' scaling policies of the jobs' current
 * versions, as the autoscaler reads them.
 */
export const scalingPoliciesPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  /** list-scaling-policies, or both list-jobs and read-job. */
  const mayList = (request: FastifyRequest, namespace: string, capability: string) =>
    request.identity.allows(namespace, capability) ||
    (request.identity.allows(namespace, "list-jobs") && request.identity.allows(namespace, "read-job"));

  app.get("/v1/scaling/policies", { schema: { querystring: listQuery } }, async (request, reply) => {
    const q = request.query as Query;
    const namespace = requestNamespace(q);
    const prefix = q.prefix ?? "";
    const type = q.type ?? "";
    const { scalingPolicies } = request.view.tables;
    if (namespace !== ALL_NAMESPACES && !mayList(request, namespace, "list-scaling-policies")) {
      throw ApiError.forbidden();
    }
    return blockingQuery(ctx, request, reply, ["scaling_policies"], () => {
      let rows: ScalingPolicyRow[];
      if (namespace === ALL_NAMESPACES) {
        rows = [...scalingPolicies.all()]
          .filter((p) => mayList(request, p.Target.Namespace ?? "", "list-scaling-policies"))
          .filter((p) => p.ID.startsWith(prefix) && p.Type.startsWith(type))
          .sort(byID);
      } else if (prefix !== "") {
        rows = scalingPolicies
          .by("namespace", namespace)
          .filter((p) => p.ID.startsWith(prefix))
          .sort(byID);
      } else if (q.job) {
        rows = scalingPolicies
          .by("job", jobKey(namespace, q.job))
          .filter((p) => type === "" || p.Type === type)
          .sort(byTarget);
      } else {
        rows = scalingPolicies
          .by("namespace", namespace)
          .filter((p) => p.Type.startsWith(type))
          .sort(byTarget);
      }
      return { index: Math.max(1, scalingPolicies.index), body: rows.map(stub) };
    });
  });

  app.get(
    "/v1/scaling/policy/:id",
    { schema: { params: idParam, querystring: readQuery } },
    async (request, reply) => {
      const namespace = requestNamespace(request.query);
      if (!mayList(request, namespace, "read-scaling-policy")) throw ApiError.forbidden();
      const { id } = request.params as { id: string };
      const { scalingPolicies } = request.view.tables;
      const body = await blockingQuery(ctx, request, reply, [{ table: "scaling_policies", key: id }], () => {
        const p = scalingPolicies.get(id);
        return { index: p?.ModifyIndex ?? Math.max(1, scalingPolicies.index), body: p ?? null };
      });
      if (!body) throw ApiError.notFound("policy not found");
      return body;
    },
  );

  refuseOtherMethods(app, "/v1/scaling/policies", ["GET"]);
  refuseOtherMethods(app, "/v1/scaling/policy/:id", ["GET"]);
};
