import { Ajv } from "ajv";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  LogController,
} from "fastify";
import { authorizeRoute, requireRouteRules } from "../acl/route-authorization.ts";
import type { AuthenticatedIdentity } from "../auth/authenticate.ts";
import { unpackPlain } from "../codec/envelope-codec.ts";
import { rpcRateMeter } from "../metrics/rpc-rate-metrics.ts";
import { QueryError } from "../query/query-error.ts";
import { ApiError } from "./api-error.ts";
import { requireAtIndexSupport } from "./at-index-routes.ts";
import {
  bodyLimitFor,
  DEFAULT_BODY_LIMIT,
  jsonDepthExceeds,
  MAX_BODY_DEPTH,
  valueDepthExceeds,
} from "./body-limits.ts";
import { childJobPath } from "./child-job-path.ts";
import type { ApiContext } from "./context.ts";
import { encodeLargeListsInSlices } from "./large-lists.ts";
import { lazyRequestLoggers } from "./lazy-request-logger.ts";
import { EventLoopLag, shedLoadWhenLagging } from "./load-shedding.ts";
import { aclAuthMethodsPlugin } from "./plugins/acl-auth-methods.ts";
import { aclBindingRulesPlugin } from "./plugins/acl-binding-rules.ts";
import { aclLoginPlugin } from "./plugins/acl-login.ts";
import { aclPoliciesPlugin } from "./plugins/acl-policies.ts";
import { aclRolesPlugin } from "./plugins/acl-roles.ts";
import { aclTokensPlugin } from "./plugins/acl-tokens.ts";
import { agentPlugin } from "./plugins/agent.ts";
import { agentHostPlugin } from "./plugins/agent-host.ts";
import { agentMonitorPlugin } from "./plugins/agent-monitor.ts";
import { agentPprofPlugin } from "./plugins/agent-pprof.ts";
import { agentSchedulersPlugin } from "./plugins/agent-schedulers.ts";
import { allocExecPlugin } from "./plugins/alloc-exec.ts";
import { allocationsPlugin } from "./plugins/allocations.ts";
import { clientAllocationsPlugin } from "./plugins/client-allocations.ts";
import { clientFsPlugin } from "./plugins/client-fs.ts";
import { clientRpcPlugin } from "./plugins/client-rpc.ts";
import { clientStatsPlugin } from "./plugins/client-stats.ts";
import { csiPluginsPlugin } from "./plugins/csi-plugins.ts";
import { csiVolumeDetachPlugin } from "./plugins/csi-volume-detach.ts";
import { csiVolumesPlugin } from "./plugins/csi-volumes.ts";
import { deploymentUpdatesPlugin } from "./plugins/deployment-updates.ts";
import { deploymentsPlugin } from "./plugins/deployments.ts";
import { evaluationsPlugin } from "./plugins/evaluations.ts";
import { eventsPlugin } from "./plugins/events.ts";
import { historyPlugin } from "./plugins/history.ts";
import { jobDispatchPlugin } from "./plugins/job-dispatch.ts";
import { jobParsePlugin } from "./plugins/job-parse.ts";
import { jobRevertPlugin } from "./plugins/job-revert.ts";
import { jobScalePlugin } from "./plugins/job-scale.ts";
import { jobSubmissionPlugin } from "./plugins/job-submission.ts";
import { jobsPlugin } from "./plugins/jobs.ts";
import { keyringPlugin } from "./plugins/keyring.ts";
import { metricsPlugin } from "./plugins/metrics.ts";
import { namespacesPlugin } from "./plugins/namespaces.ts";
import { nodeMetaPlugin } from "./plugins/node-meta.ts";
import { nodePoolsPlugin } from "./plugins/node-pools.ts";
import { nodesPlugin } from "./plugins/nodes.ts";
import { registerOpenApi } from "./plugins/openapi.ts";
import { operatorAutopilotPlugin } from "./plugins/operator-autopilot.ts";
import { operatorRaftPlugin } from "./plugins/operator-raft.ts";
import { operatorStatePlugin } from "./plugins/operator-state.ts";
import { regionsPlugin } from "./plugins/regions.ts";
import { scalingPoliciesPlugin } from "./plugins/scaling-policies.ts";
import { schedulerConfigPlugin } from "./plugins/scheduler-config.ts";
import { searchPlugin } from "./plugins/search.ts";
import { servicesPlugin } from "./plugins/services.ts";
import { statusPlugin } from "./plugins/status.ts";
import { systemPlugin } from "./plugins/system.ts";
import { uiPlugin } from "./plugins/ui.ts";
import { validatePlugin } from "./plugins/validate.ts";
import { variablesPlugin } from "./plugins/variables.ts";
import { wellKnownPlugin } from "./plugins/well-known.ts";
import { refuseWritesWhenReadOnly } from "./read-only-refusal.ts";
import { admissionOf, admittingServerFactory } from "./request-admission.ts";
import { SchemaValidators } from "./validator-cache.ts";
import { AT_INDEX_HEADER, resolveView, type View } from "./view.ts";

declare module "fastify" {
  interface FastifyRequest {
    identity: AuthenticatedIdentity;
    /** The tables this request reads: live, or as of `?at_index=N`. */
    view: View;
  }
  interface FastifyInstance {
    /** Settles once the routes' schemas are compiled, or the server closed first (validator-cache.ts). */
    readonly routeSchemasCompiled: Promise<void>;
  }
}

/** Plugins, one per resource, each registered with the shared context. */
const PLUGINS = [
  statusPlugin,
  agentPlugin,
  agentSchedulersPlugin,
  agentHostPlugin,
  agentMonitorPlugin,
  agentPprofPlugin,
  regionsPlugin,
  operatorRaftPlugin,
  operatorAutopilotPlugin,
  metricsPlugin,
  eventsPlugin,
  historyPlugin,
  systemPlugin,
  namespacesPlugin,
  evaluationsPlugin,
  schedulerConfigPlugin,
  searchPlugin,
  nodesPlugin,
  nodePoolsPlugin,
  allocationsPlugin,
  allocExecPlugin,
  clientFsPlugin,
  clientAllocationsPlugin,
  clientStatsPlugin,
  nodeMetaPlugin,
  jobsPlugin,
  jobScalePlugin,
  jobParsePlugin,
  jobRevertPlugin,
  jobDispatchPlugin,
  jobSubmissionPlugin,
  scalingPoliciesPlugin,
  validatePlugin,
  deploymentsPlugin,
  deploymentUpdatesPlugin,
  clientRpcPlugin,
  operatorStatePlugin,
  keyringPlugin,
  variablesPlugin,
  servicesPlugin,
  csiVolumesPlugin,
  csiPluginsPlugin,
  csiVolumeDetachPlugin,
  aclTokensPlugin,
  aclAuthMethodsPlugin,
  aclBindingRulesPlugin,
  wellKnownPlugin,
  aclPoliciesPlugin,
  aclRolesPlugin,
  aclLoginPlugin,
  uiPlugin,
];

/**
 * The HTTP API: one fastify instance, one authentication step for every
 * route, one mapping from errors to responses.
 */
export async function buildApi(ctx: ApiContext): Promise<FastifyInstance> {
  const httpLog = ctx.logger.child({ component: "http" });
  const app = Fastify({
    // Heartbeats first, the rest paced per turn of the loop (request-admission.ts).
    serverFactory: admittingServerFactory(),
    // pino's Logger is a FastifyBaseLogger; the cast keeps fastify's default generics.
    loggerInstance: lazyRequestLoggers(httpLog as FastifyBaseLogger),
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: DEFAULT_BODY_LIMIT,
    rewriteUrl: (req) => childJobPath(req.url ?? "/"),
    schemaErrorFormatter: (errors, dataVar) => {
      const e = errors[0];
      if (!e) return new Error(`${dataVar} is invalid`);
      const where = `${dataVar}${e.instancePath.replaceAll("/", ".")}`;
      return new Error(`${where} ${e.message ?? "is invalid"}`);
    },
  });

  // Nomad's decoders (encoding/json over HTTP, the msgpack codec over RPC)
  // ignore fields they do not know, so clients of newer and older Nomad
  // versions keep working: body fields a schema does not list are dropped
  // (and named at debug level), while a wrong type is still a 400 naming the
  // field. Query strings and path params are text, coerced to the declared
  // types.
  const lenient = new Ajv({
    removeAdditional: true,
    coerceTypes: false,
    useDefaults: true,
    allErrors: false,
  });
  const coercing = new Ajv({
    removeAdditional: false,
    coerceTypes: "array",
    useDefaults: true,
    allErrors: false,
  });
  const dropped = new Ajv({ removeAdditional: false, coerceTypes: false, allErrors: true });
  const bodyValidators = new SchemaValidators(lenient);
  const partValidators = new SchemaValidators(coercing);
  const droppedReports = new SchemaValidators(dropped);
  app.setValidatorCompiler(({ schema, httpPart }) => {
    if (httpPart !== "body") return partValidators.validator(schema);
    const validate = bodyValidators.validator(schema);
    if (!httpLog.isLevelEnabled("debug")) return validate;
    const reportDropped = droppedReports.validator(schema);
    return (data: unknown, dataCtx?: Parameters<typeof validate>[1]) => {
      if (!reportDropped(data)) {
        const fields = (reportDropped.errors ?? [])
          .filter((e) => e.keyword === "additionalProperties")
          .map((e) => `body${e.instancePath.replaceAll("/", ".")}.${String(e.params.additionalProperty)}`);
        if (fields.length > 0) httpLog.debug({ fields }, "ignored unknown body fields");
      }
      return validate(data, dataCtx) ? true : { error: validate.errors ?? [] };
    };
  });

  // Schemas compile at their route's first request, or in the turns after
  // the server is ready, whichever comes first (validator-cache.ts).
  let stopWarming = false;
  app.addHook("onClose", async () => {
    stopWarming = true;
  });
  let compiled!: () => void;
  app.decorate(
    "routeSchemasCompiled",
    new Promise<void>((resolve) => {
      compiled = resolve;
    }),
  );
  app.addHook("onReady", async () => {
    void (async () => {
      const all = [partValidators, bodyValidators, droppedReports];
      for (const validators of all) {
        await validators.warm(
          () => stopWarming,
          (err) => httpLog.error({ err }, "a route's schema does not compile"),
        );
      }
      const schemas = all.reduce((n, v) => n + v.compiledCount, 0);
      if (!stopWarming) httpLog.debug({ schemas }, "route schemas compiled");
      compiled();
    })();
  });

  // Nomad's clients send JSON bodies with any content type, or none; an empty
  // body is no body.
  app.removeAllContentTypeParsers();
  app.addHook("onRoute", (route) => {
    route.bodyLimit ??= bodyLimitFor(route.url);
    // Client RPCs answer one reply struct, never a list: no wrapper (a promise per call) for them.
    if (!route.url.startsWith(CLIENT_RPC_PREFIX)) encodeLargeListsInSlices(route);
    requireRouteRules(route);
    requireAtIndexSupport(route);
  });
  // Nomad's RPC rate metric, counted by each route's own response hook.
  const rpcRate = {
    aclEnabled: ctx.config.aclEnabled,
    disableLabels: ctx.config.disableRpcRateMetricsLabels,
  };
  app.addHook("onRoute", (route) => {
    const meter = rpcRateMeter(ctx.metrics, rpcRate, route);
    if (meter === undefined) return;
    const own = route.onResponse;
    route.onResponse = own === undefined ? [meter] : [...(Array.isArray(own) ? own : [own]), meter];
  });
  ctx.metrics.gauge("chronomad.http.requests_waiting", () => admissionOf(app.server)?.waiting ?? 0);
  const lag = new EventLoopLag();
  app.addHook("onClose", async () => lag.close());
  ctx.metrics.gauge("chronomad.runtime.event_loop_lag_ms", () => lag.lagMs);
  shedLoadWhenLagging(app, lag, ctx.config.shedReadsAfterLag, ctx.metrics);
  const parseJsonBody: ContentTypeParserFn = (_request, body, done) => {
    const text = String(body);
    if (text.trim() === "") return done(null, undefined);
    if (jsonDepthExceeds(text, MAX_BODY_DEPTH)) return done(tooDeep(), undefined);
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(ApiError.badRequest(`invalid JSON body: ${(err as Error).message}`), undefined);
    }
  };
  app.addContentTypeParser("*", { parseAs: "string" }, parseJsonBody);
  // The same parser, named for the type most clients send: fastify keeps the
  // parser it found for a named type, while for the catch-all it parses the
  // Content-Type header and searches again on every request.
  app.addContentTypeParser("application/json", { parseAs: "string" }, parseJsonBody);
  // Client RPCs may come msgpack-encoded, as Nomad's clients speak it.
  app.addContentTypeParser("application/msgpack", { parseAs: "buffer" }, (_request, body, done) => {
    const bytes = body as Buffer;
    if (bytes.length === 0) return done(null, undefined);
    let value: unknown;
    try {
      value = unpackPlain(bytes);
    } catch (err) {
      return done(ApiError.badRequest(`invalid msgpack body: ${(err as Error).message}`), undefined);
    }
    if (valueDepthExceeds(value, MAX_BODY_DEPTH)) return done(tooDeep(), undefined);
    done(null, value);
  });

  app.decorateRequest("identity", undefined as unknown as AuthenticatedIdentity);
  app.decorateRequest("view", undefined as unknown as View);
  // First of the request hooks: a write to a read-only server goes no further.
  refuseWritesWhenReadOnly(app, ctx);
  // Almost every request reads the live tables: one View for all of them.
  // A callback hook, not an async one: it runs before every route, and is
  // done at once unless the request asks for an older view (?at_index);
  // an async hook cost a promise and a turn of the microtask queue each time.
  let live: View = { tables: ctx.tables, store: ctx.store };
  app.addHook("onRequest", (request, reply, done) => {
    try {
      request.identity = ctx.authenticator.authenticate(request);
      authorizeRoute(ctx, request);
    } catch (err) {
      return done(err as Error);
    }
    const atIndex = (request.query as Record<string, unknown> | undefined)?.at_index;
    if (atIndex === undefined || atIndex === "") {
      if (live.tables !== ctx.tables || live.store !== ctx.store)
        live = { tables: ctx.tables, store: ctx.store };
      request.view = live;
      return done();
    }
    resolveView(ctx, request).then((view) => {
      request.view = view;
      if (view.atIndex !== undefined) reply.header(AT_INDEX_HEADER, String(view.atIndex));
      done();
    }, done);
  });
  // Node's server.close() drops only the keep-alive connections that are idle
  // at that moment. A connection whose request was still running goes idle
  // later and would hold the close open for the whole keep-alive timeout
  // (72 s), so once closing starts every answer asks its client to hang up.
  let closing = false;
  ctx.closing$.subscribe({ complete: () => (closing = true) });
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (closing) reply.header("connection", "close");
    done(null, payload);
  });
  // Runs for every request: no label object made per call, the elapsed time
  // (a clock read) taken once, the debug line built only when it is logged.
  const methodLabels = new Map<string, { method: string }>();
  app.addHook("onResponse", (request, reply, done) => {
    const method = request.method;
    let labels = methodLabels.get(method);
    if (labels === undefined) {
      labels = { method };
      methodLabels.set(method, labels);
    }
    const ms = reply.elapsedTime;
    ctx.metrics.sample("chronomad.http.request_ms", ms, labels);
    ctx.metrics.incr("chronomad.http.requests", 1, labels);
    // A request's logger is made from httpLog, at its level.
    if (httpLog.isLevelEnabled("debug"))
      request.log.debug({ url: request.url, status: reply.statusCode, ms }, "request");
    done();
  });

  app.setErrorHandler((error: FastifyError | ApiError | QueryError, request, reply) => {
    let status = 500;
    let message = "internal error";
    if (error instanceof ApiError || error instanceof QueryError) {
      status = error.status;
      message = error.message;
    } else if (error.validation) {
      status = 400;
      message = error.message;
    } else if (typeof error.statusCode === "number" && error.statusCode >= 400 && error.statusCode < 500) {
      status = error.statusCode;
      message = error.message;
    } else {
      request.log.error({ err: error, url: request.url }, "request failed");
    }
    // Nomad answers errors with the message as plain text.
    return reply.status(status).type("text/plain; charset=utf-8").send(message);
  });
  // An unknown path may be one of Nomad's that chronomad does not serve:
  // the answer says so. Only the path is echoed: the query string may carry
  // a filter or other text nobody asked to see back.
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?", 1)[0];
    return reply
      .status(404)
      .type("text/plain; charset=utf-8")
      .send(`chronomad does not serve ${request.method} ${path}`);
  });

  // Before the routes: it learns them as they are added.
  await registerOpenApi(app);
  for (const plugin of PLUGINS) await app.register(plugin, ctx);
  return app;
}

const CLIENT_RPC_PREFIX = "/v1/rpc/";

type ContentTypeParserFn = Parameters<FastifyInstance["addContentTypeParser"]>[2];

function tooDeep(): ApiError {
  return ApiError.badRequest(`request body nests deeper than ${MAX_BODY_DEPTH} levels`);
}
