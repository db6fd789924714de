import { randomUUID } from "node:crypto";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { latestDeployment } from "../../../projections/deployments.ts";
import { jobKey } from "../../../projections/evals.ts";
import { isParameterized } from "../../../projections/job-children.ts";
import type { JobRow } from "../../../projections/jobs.ts";
import { newEvaluation } from "../../../streams/evals.ts";
import { namespaceIdTokenizer, paginateInSlices, parseListQuery } from "../../query/paginator.ts";
import { queryBool } from "../../query/query-bool.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery, setReadHeaders } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { planJob } from "../job-plan.ts";
import { jobStub, jobVersionsView, summaryView } from "../job-views.ts";
import {
  deregisterJob,
  evalPriorityParam,
  jobFromRequest,
  type RegisterBody,
  registerBodySchema,
  registerJob,
} from "../job-writes.ts";
import { ALL_NAMESPACES, badRequestOnQueryError } from "../list-pages.ts";
import { allocStub } from "../node-views.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import {
  COMMON_READ_PARAMS,
  idParam,
  LIST_PARAMS,
  textQuery,
  WRITE_REQUEST_FIELDS,
} from "../request-schemas.ts";
import { withQueryMeta } from "../write-answer.ts";

const readQuery = textQuery(...LIST_PARAMS, "meta", "all", "diffs", ...COMMON_READ_PARAMS);

const writeQuery = textQuery("namespace", "purge", "global", "eval_priority", "no_shutdown_delay", "region");

const planBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    Job: {},
    Diff: { type: "boolean" },
    PolicyOverride: { type: "boolean" },
    ...WRITE_REQUEST_FIELDS,
  },
} as const;

const evaluateBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    JobID: { type: "string" },
    EvalOptions: {
      type: ["object", "null"],
      additionalProperties: false,
      properties: { ForceReschedule: { type: "boolean" } },
    },
    Region: { type: "string" },
    Namespace: { type: "string" },
    SecretID: { type: "string" },
  },
} as const;

type Query = Record<string, string | undefined>;

/** The job a `/v1/job/:id/...` request names: its namespace, ID and table key. */
interface JobRef {
  readonly namespace: string;
  readonly id: string;
  readonly key: string;
}

/**
 * `/v1/jobs` and `/v1/job/:id[/...]`, as in Nomad: register (a new version
 * and its evaluation in one record), read, list, deregister (stop or purge),
 * plan (a dry run of the scheduler, nothing written), and the job's
 * allocations, evaluations, versions, summary and deployments.
 */
export const jobsPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const namespaceOf = (request: FastifyRequest) => (request.query as Query).namespace || "default";
  const canRead = (request: FastifyRequest, namespace: string) => {
    if (!request.identity.allows(namespace, "read-job")) throw ApiError.forbidden();
  };
  const jobOr404 = (request: FastifyRequest): JobRow => {
    const job = request.view.tables.jobs.get(
      jobKey(namespaceOf(request), (request.params as { id: string }).id),
    );
    if (!job) throw ApiError.notFound("job not found");
    return job;
  };

  app.get("/v1/jobs", { schema: { querystring: readQuery } }, async (request, reply) => {
    const q = request.query as Query;
    const namespace = q.namespace || "default";
    const prefix = q.prefix ?? "";
    const meta = queryBool(q, "meta") ?? false;
    const { jobs, jobSummaries } = request.view.tables;
    const allow = (j: JobRow) => request.identity.allows(j.Namespace, "list-jobs");
    return blockingQuery(ctx, request, reply, ["jobs", "job_summary"], async () => {
      // The rows are copied out first, so the sliced walk may yield while jobs change.
      const page = await badRequestOnQueryError(() => {
        const list = parseListQuery(q);
        const rows =
          namespace === ALL_NAMESPACES
            ? [...jobs.all()].filter((j) => j.ID.startsWith(prefix))
            : [...jobs.withPrefix(`${namespace}\u0000${prefix}`)];
        if (list.reverse) rows.reverse();
        return paginateInSlices(rows, {
          perPage: list.perPage,
          nextToken: list.nextToken,
          reverse: list.reverse,
          filter: list.filter,
          allow,
          tokenizer: namespaceIdTokenizer,
        });
      });
      const body = page.items.map((j) => jobStub(j, jobSummaries.get(jobKey(j.Namespace, j.ID)), meta));
      return { index: Math.max(jobs.index, jobSummaries.index), body, nextToken: page.nextToken };
    });
  });

  /** Nomad's job write replies carry the RPC's QueryMeta fields beside the index. */
  const writeAnswer = <A extends { readonly Index: number }>(reply: FastifyReply, answer: A) => {
    reply.header("X-Nomad-Index", String(answer.Index));
    return withQueryMeta(answer, ctx.leadership.leaderAddress() !== "");
  };

  const register = async (request: FastifyRequest, pathID: string | undefined) => {
    const body = request.body as RegisterBody | null | undefined;
    const job = jobFromRequest(ctx, body, pathID, (request.query as Query).namespace);
    return registerJob(ctx, request.identity, body!, job);
  };

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/jobs",
    schema: { body: registerBodySchema, querystring: writeQuery },
    handler: async (request, reply) => {
      const answer = await register(request, undefined);
      return writeAnswer(reply, answer);
    },
  });

  app.get("/v1/job/:id", { schema: { params: idParam, querystring: readQuery } }, async (request, reply) => {
    const namespace = namespaceOf(request);
    canRead(request, namespace);
    const { id } = request.params as { id: string };
    const { jobs } = request.view.tables;
    const body = await blockingQuery(ctx, request, reply, ["jobs"], () => {
      const job = jobs.get(jobKey(namespace, id));
      return { index: job?.ModifyIndex ?? jobs.index, body: job ?? null };
    });
    if (!body) throw ApiError.notFound("job not found");
    return body;
  });

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/job/:id",
    schema: { params: idParam, body: registerBodySchema, querystring: writeQuery },
    handler: async (request, reply) => {
      const answer = await register(request, (request.params as { id: string }).id);
      return writeAnswer(reply, answer);
    },
  });

  app.delete(
    "/v1/job/:id",
    { schema: { params: idParam, querystring: writeQuery } },
    async (request, reply) => {
      const q = request.query as Query;
      const purge = queryBool(q, "purge") ?? false;
      // Checked as Nomad checks them; a single region, and no shutdown delays to skip.
      queryBool(q, "global");
      queryBool(q, "no_shutdown_delay");
      const evalPriority = evalPriorityParam(q.eval_priority);
      const { id } = request.params as { id: string };
      const answer = await deregisterJob(
        ctx,
        request.identity,
        namespaceOf(request),
        id,
        purge,
        evalPriority,
      );
      return writeAnswer(reply, answer);
    },
  );

  /** `GET /v1/job/:id/<part>`: the caller may read the job's namespace, or nothing is looked at. */
  const readJobPart = (
    part: string,
    read: (request: FastifyRequest, reply: FastifyReply, job: JobRef) => Promise<unknown>,
  ) => {
    const url = `/v1/job/:id/${part}`;
    app.get(url, { schema: { params: idParam, querystring: readQuery } }, async (request, reply) => {
      const namespace = namespaceOf(request);
      canRead(request, namespace);
      const { id } = request.params as { id: string };
      return read(request, reply, { namespace, id, key: jobKey(namespace, id) });
    });
    refuseOtherMethods(app, url, ["GET"]);
  };

  readJobPart("allocations", async (request, reply, job) => {
    const all = queryBool(request.query as Query, "all") ?? false;
    const { allocs, jobs } = request.view.tables;
    return blockingQuery(ctx, request, reply, ["allocs"], () => {
      const current = jobs.get(job.key);
      let rows = allocs.by("job", job.key);
      // Without ?all, only the allocations of this instance of the job (not of an earlier one with the same ID).
      if (!all && current) {
        rows = rows.filter((a) => (a.Job?.CreateIndex ?? current.CreateIndex) === current.CreateIndex);
      }
      rows.sort((a, b) => a.CreateIndex - b.CreateIndex);
      return {
        index: allocs.index,
        body: rows.map((a) => allocStub(a, { resources: false, taskStates: true })),
      };
    });
  });

  readJobPart("evaluations", async (request, reply, job) => {
    const { evals } = request.view.tables;
    return blockingQuery(ctx, request, reply, ["evals"], () => ({
      index: evals.index,
      body: evals.by("job", job.key).sort((a, b) => a.CreateIndex - b.CreateIndex),
    }));
  });

  readJobPart("versions", async (request, reply, job) => {
    const diffs = queryBool(request.query as Query, "diffs") ?? false;
    jobOr404(request);
    const { jobVersions } = request.view.tables;
    return blockingQuery(ctx, request, reply, ["job_versions"], () => ({
      index: jobVersions.index,
      body: {
        ...jobVersionsView(jobVersions.by("job", job.key), diffs),
        Index: Math.max(1, jobVersions.index),
        LastContact: 0,
        KnownLeader: true,
        NextToken: "",
      },
    }));
  });

  readJobPart("summary", async (request, reply, job) => {
    const { jobSummaries } = request.view.tables;
    const body = await blockingQuery(ctx, request, reply, ["job_summary"], () => {
      const s = jobSummaries.get(job.key);
      return { index: s?.ModifyIndex ?? jobSummaries.index, body: s ? summaryView(s) : null };
    });
    if (!body) throw ApiError.notFound("job not found");
    return body;
  });

  readJobPart("deployments", async (request, reply, job) => {
    const { deployments } = request.view.tables;
    return blockingQuery(ctx, request, reply, ["deployments"], () => ({
      index: deployments.index,
      body: deployments.by("job", job.key).sort((a, b) => b.CreateIndex - a.CreateIndex),
    }));
  });

  readJobPart("deployment", async (request, reply, job) => {
    const { deployments } = request.view.tables;
    return blockingQuery(ctx, request, reply, ["deployments"], () => ({
      index: deployments.index,
      body: latestDeployment(deployments, job.namespace, job.id) ?? null,
    }));
  });

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/job/:id/plan",
    schema: { params: idParam, body: planBody, querystring: writeQuery },
    handler: async (request, reply) => {
      const body = request.body as (RegisterBody & { Diff?: boolean }) | null | undefined;
      const job = jobFromRequest(
        ctx,
        body,
        (request.params as { id: string }).id,
        (request.query as Query).namespace,
      );
      if (!request.identity.allows(job.Namespace, "submit-job")) throw ApiError.forbidden();
      const answer = planJob(ctx, job, body?.Diff === true);
      setReadHeaders(ctx, reply, answer.Index as number);
      return answer;
    },
  });

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/job/:id/evaluate",
    schema: { params: idParam, body: evaluateBody, querystring: writeQuery },
    handler: async (request, reply) => {
      const job = jobOr404(request);
      if (!request.identity.allows(job.Namespace, "submit-job")) throw ApiError.forbidden();
      if (job.Periodic !== null) throw ApiError.badRequest("can't evaluate periodic job");
      if (isParameterized(job)) throw ApiError.badRequest("can't evaluate parameterized job");
      const evaluation = newEvaluation({
        ID: randomUUID(),
        Namespace: job.Namespace,
        Priority: job.Priority,
        Type: job.Type,
        TriggeredBy: "job-register",
        JobID: job.ID,
        JobModifyIndex: job.JobModifyIndex,
        CreateTime: ctx.clock.now() * 1e6,
      });
      const index = await commit(ctx, request.identity, [
        { type: "EvaluationsUpserted", v: 1, data: { Evals: [evaluation] } },
      ]);
      reply.header("X-Nomad-Index", String(index));
      return {
        EvalID: evaluation.ID,
        EvalCreateIndex: index,
        JobModifyIndex: job.JobModifyIndex,
        Warnings: "",
        Index: index,
      };
    },
  });

  refuseOtherMethods(app, "/v1/jobs", ["GET", "PUT", "POST"]);
  refuseOtherMethods(app, "/v1/job/:id", ["GET", "PUT", "POST", "DELETE"]);
  for (const sub of ["plan", "evaluate"]) refuseOtherMethods(app, `/v1/job/:id/${sub}`, ["PUT", "POST"]);
};
