import type { FastifyInstance } from "fastify";
import { ApiError } from "./api-error.ts";
import type { ApiContext } from "./context.ts";

/** The answer to every write a read-only server is sent. */
export const READ_ONLY_MESSAGE =
  "this server is read-only (serve --read-only): it serves reads, history and the event stream " +
  "of its log and accepts no writes";

/** Methods that never change anything. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Routes that Nomad reaches with PUT or POST but that only read: they
 * append nothing, so a read-only server serves them. (Anything missing here
 * is refused, never let through: the log of a read-only server refuses
 * appends as well.)
 */
const READS_BY_PUT_OR_POST = new Set(
  [
    // Prefix and fuzzy search: the query is the body.
    "/v1/search",
    "/v1/search/fuzzy",
    // HCL/JSON job parsing and validation: pure functions of the body.
    "/v1/jobs/parse",
    "/v1/validate/job",
    // Job.Plan is a dry run of the scheduler against the tables (src/api/job-plan.ts
    // appends nothing): "what would this job have done to that cluster" is a fair
    // forensic question.
    "/v1/job/:id/plan",
  ].flatMap((url) => [`PUT ${url}`, `POST ${url}`]),
);

/**
 * `serve --read-only`: refuses every request that could write, before
 * authentication and before any handler (so none is forwarded to a leader
 * or reaches the log). Client RPCs (/v1/rpc/*) are all refused: a
 * read-only server holds no heartbeat timers and no client belongs to it.
 *
 * 403, not 405 or 500: the method is a valid one for the route (405 would
 * say the route never takes it), and Nomad's clients retry a 500 ("No
 * cluster leader") but give up on a 403 and show its text, which is what
 * a write to a forensic copy should get: a final, readable refusal.
 *
 * Unknown paths still get their 404, and the 405 routes their 405, as on
 * any server.
 */
export function refuseWritesWhenReadOnly(app: FastifyInstance, ctx: Pick<ApiContext, "config">): void {
  if (!ctx.config.readOnly) return;
  app.addHook("onRequest", async (request) => {
    if (SAFE_METHODS.has(request.method)) return;
    const url = request.routeOptions.url;
    if (url === undefined) return;
    if ((request.routeOptions.config as { methodRefusal?: boolean } | undefined)?.methodRefusal) return;
    if (READS_BY_PUT_OR_POST.has(`${request.method} ${url}`)) return;
    throw new ApiError(403, READ_ONLY_MESSAGE);
  });
}
