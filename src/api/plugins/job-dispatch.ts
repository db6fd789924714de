import { randomUUID } from "node:crypto";
import type { FastifyPluginAsync, FastifyReply } from "fastify";
import { jobKey } from "../../../projections/evals.ts";
import { isParameterized, isPeriodicActive, liveChildWithToken } from "../../../projections/job-children.ts";
import type { JobRow } from "../../../projections/jobs.ts";
import { currentSchedulerConfig } from "../../../projections/scheduler-config.ts";
import { newEvaluation } from "../../../streams/evals.ts";
import { DISPATCH_LAUNCH_SUFFIX, type JobDispatched } from "../../../streams/periodic.ts";
import { periodicLaunch } from "../../jobs/periodic-launch.ts";
import { snappyEncodeLiteral } from "../../jobs/snappy.ts";
import { ApiError } from "../api-error.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { REJECT_REGISTRATION } from "../job-writes.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { idParam, textQuery, WRITE_REQUEST_FIELDS } from "../request-schemas.ts";
import { requestNamespace } from "../write-answer.ts";

/** Nomad's DispatchPayloadSizeLimit: 16 KiB of payload, before compression. */
export const DISPATCH_PAYLOAD_SIZE_LIMIT = 16 * 1024;

const writeQuery = textQuery("namespace", "region", "idempotency_token");

/** Nomad's JobDispatchRequest (its WriteRequest embedded). */
const dispatchBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    JobID: { type: ["string", "null"] },
    Payload: { type: ["string", "null"] },
    Meta: { type: ["object", "null"], additionalProperties: { type: "string" } },
    // python-nomad sends null for what it was not given.
    IdPrefixTemplate: { type: ["string", "null"] },
    ...WRITE_REQUEST_FIELDS,
  },
} as const;

/** Nomad's PeriodicForceRequest: the job is the path's; the body is a WriteRequest at most. */
const forceBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: { JobID: { type: "string" }, ...WRITE_REQUEST_FIELDS },
} as const;

interface DispatchBody {
  JobID?: string;
  Payload?: string | null;
  Meta?: Record<string, string> | null;
  IdPrefixTemplate?: string | null;
  Namespace?: string;
  IdempotencyToken?: string;
}

/** Nomad's JobDispatchResponse. */
interface DispatchAnswer {
  DispatchedJobID: string;
  EvalID: string;
  EvalCreateIndex: number;
  JobCreateIndex: number;
  Index: number;
}

/**
 * `/v1/job/:id/periodic/force` (Nomad's Periodic.Force: a launch now, the
 * same record the leader's periodic dispatcher writes at each tick) and
 * `/v1/job/:id/dispatch` (Job.Dispatch: a child of a parameterized job).
 * Both need dispatch-job in the job's namespace.
 */
export const jobDispatchPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const answer = <A extends { readonly Index: number }>(reply: FastifyReply, a: A): A => {
    reply.header("X-Nomad-Index", String(a.Index));
    return a;
  };

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/job/:id/periodic/force",
    schema: { params: idParam, body: forceBody, querystring: writeQuery },
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      const namespace = requestNamespace(request.query, request.body as { Namespace?: string } | null);
      if (!request.identity.allows(namespace, "dispatch-job")) throw ApiError.forbidden();
      const job = ctx.tables.jobs.get(jobKey(namespace, id));
      if (!job) throw ApiError.notFound("job not found");
      if (!job.Periodic) throw ApiError.badRequest("can't force launch non-periodic job");
      if (!isPeriodicActive(job)) {
        throw ApiError.badRequest(
          `force launch for job "${id}" failed: can't force run non-tracked job ${id}`,
        );
      }
      const now = ctx.clock.now();
      const last = ctx.tables.periodicLaunches.get(jobKey(namespace, id));
      if (last && now <= last.Launch) {
        throw ApiError.conflict(`force launch for job "${id}" failed: the job last launched at or after now`);
      }
      const data = periodicLaunch(job, now, now, randomUUID(), true);
      const index = await commit(ctx, request.identity, [{ type: "PeriodicJobLaunched", v: 1, data }]);
      return answer(reply, { EvalID: data.Eval.ID, EvalCreateIndex: index, Index: index });
    },
  });

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/job/:id/dispatch",
    schema: { params: idParam, body: dispatchBody, querystring: writeQuery },
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      const body = (request.body ?? {}) as DispatchBody;
      const namespace = requestNamespace(request.query, body);
      if (!request.identity.allows(namespace, "dispatch-job")) throw ApiError.forbidden();
      if (
        currentSchedulerConfig(ctx.tables.schedulerConfig).RejectJobRegistration &&
        !request.identity.allows("*", "management")
      ) {
        throw ApiError.forbidden(REJECT_REGISTRATION);
      }
      const parent = ctx.tables.jobs.get(jobKey(namespace, id));
      if (!parent) throw ApiError.notFound("parameterized job not found");
      if (!isParameterized(parent)) {
        throw ApiError.badRequest(`Specified job "${id}" is not a parameterized job`);
      }
      if (parent.Stop) throw ApiError.badRequest(`Specified job "${id}" is stopped`);
      const payload = decodePayload(body.Payload);
      const meta = body.Meta ?? {};
      const invalid = dispatchRefusal(parent, payload, meta);
      if (invalid) throw ApiError.badRequest(invalid);
      const token =
        (request.query as Record<string, string | undefined>).idempotency_token ||
        body.IdempotencyToken ||
        "";
      const existing = token === "" ? undefined : liveChildWithToken(ctx.tables.jobs, parent, token);
      if (existing) return answer(reply, existingChild(existing));

      const now = ctx.clock.now();
      const template = body.IdPrefixTemplate ? `${body.IdPrefixTemplate}-` : "";
      const childID = `${id}${DISPATCH_LAUNCH_SUFFIX}${template}${Math.floor(now / 1000)}-${randomUUID().slice(0, 8)}`;
      // A periodic parameterized job's children are launched by the periodic dispatcher, not evaluated now.
      const evaluation = parent.Periodic
        ? null
        : newEvaluation({
            ID: randomUUID(),
            Namespace: namespace,
            Priority: parent.Priority,
            Type: parent.Type,
            TriggeredBy: "job-register",
            JobID: childID,
            CreateTime: now * 1e6,
          });
      const data: JobDispatched = {
        Namespace: namespace,
        ParentID: id,
        ChildID: childID,
        Meta: Object.keys(meta).length > 0 ? meta : null,
        Payload: snappyEncodeLiteral(payload).toString("base64"),
        IdempotencyToken: token,
        Eval: evaluation,
      };
      let index: number;
      try {
        index = await commit(ctx, request.identity, [{ type: "JobDispatched", v: 1, data }]);
      } catch (err) {
        // Another dispatch with the token applied first: its child is the answer.
        const raced = token === "" ? undefined : liveChildWithToken(ctx.tables.jobs, parent, token);
        if (err instanceof ApiError && err.status === 409 && raced)
          return answer(reply, existingChild(raced));
        throw err;
      }
      const result: DispatchAnswer = {
        DispatchedJobID: childID,
        EvalID: evaluation?.ID ?? "",
        EvalCreateIndex: evaluation ? index : 0,
        JobCreateIndex: index,
        Index: index,
      };
      return answer(reply, result);
    },
  });

  refuseOtherMethods(app, "/v1/job/:id/periodic/force", ["PUT", "POST"]);
  refuseOtherMethods(app, "/v1/job/:id/dispatch", ["PUT", "POST"]);
};

/** The body's Payload ([]byte in Go: base64 in JSON). */
function decodePayload(text: string | null | undefined): Buffer {
  if (text === undefined || text === null || text === "") return Buffer.alloc(0);
  const clean = text.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(clean) || clean.length % 4 === 1) {
    throw ApiError.badRequest("Payload must be base64-encoded bytes");
  }
  return Buffer.from(clean, "base64");
}

/** Nomad's validateDispatchRequest: the payload and meta the parameterized block allows. */
export function dispatchRefusal(
  parent: JobRow,
  payload: Uint8Array,
  meta: Readonly<Record<string, string>>,
): string | undefined {
  const config = (parent.ParameterizedJob ?? {}) as Record<string, unknown>;
  const has = payload.length !== 0;
  if (config.Payload === "required" && !has)
    return "Payload is not provided but required by parameterized job";
  if (config.Payload === "forbidden" && has) return "Payload provided but forbidden by parameterized job";
  if (payload.length > DISPATCH_PAYLOAD_SIZE_LIMIT) {
    return `Payload exceeds maximum size; ${payload.length} > ${DISPATCH_PAYLOAD_SIZE_LIMIT}`;
  }
  const required = stringList(config.MetaRequired);
  const optional = stringList(config.MetaOptional);
  const unpermitted = Object.keys(meta)
    .filter((k) => !required.includes(k) && !optional.includes(k))
    .sort();
  if (unpermitted.length > 0) {
    return `Dispatch request included unpermitted metadata keys: [${unpermitted.join(" ")}]`;
  }
  const missing = required.filter((k) => meta[k] === undefined).sort();
  if (missing.length > 0) return `Dispatch did not provide required meta keys: [${missing.join(" ")}]`;
  return undefined;
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

function existingChild(child: JobRow): DispatchAnswer {
  return {
    DispatchedJobID: child.ID,
    EvalID: "",
    EvalCreateIndex: 0,
    JobCreateIndex: child.CreateIndex,
    Index: child.ModifyIndex,
  };
}
