import type { FastifyPluginAsync, FastifyReply } from "fastify";
import {
  cmdline,
  cpuProfile,
  lookupProfile,
  ProfileNotFound,
  ProfileNotServed,
  type RuntimeProfile,
  sampleHeap,
} from "../../diagnostics/runtime-profiles.ts";
import { nodeRpc, sessionOrForward } from "../../rpc/client-calls.ts";
import { agentTarget, allowsDebug, forwardToServer } from "../agent-target.ts";
import { ApiError } from "../api-error.ts";
import { httpErrorOf, isNoNodeConn, queryOptions } from "../client-call-checks.ts";
import type { ApiContext } from "../context.ts";
import { textQuery } from "../request-schemas.ts";

/** Nomad's pprof.ReqType, by the path's last segment. */
const REQ_TYPES: Record<string, string> = { cmdline: "cmdline", profile: "cpu", trace: "trace" };

const TRACE_REFUSAL =
  "chronomad runs on Node.js and has no Go execution trace: take a CPU profile (/v1/agent/pprof/profile) " +
  "or start the server with node's --cpu-prof";

/**
 * `/v1/agent/pprof/<profile>`: runtime profiles in pprof's format. With
 * `node_id`, that client agent's own (Go's), through its Agent.Profile, as
 * `nomad operator debug` collects them; with `server_id`, that server's;
 * otherwise this server's: V8's CPU profile (`profile`), its sampled heap
 * (`heap`) and its command line (`cmdline`). Go's execution trace and
 * goroutine, thread, block and mutex profiles have no V8 counterpart (501).
 * Nomad answers the bare `/v1/agent/pprof/` with 404, and so does chronomad.
 */
export const agentPprofPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  if (ctx.config.aclEnabled || ctx.config.enableDebug) {
    // Go samples its heap from the start; so does a server whose profiles someone may read.
    const release = await sampleHeap();
    app.addHook("onClose", async () => release());
  }
  app.get(
    "/v1/agent/pprof/:profile",
    {
      schema: {
        params: { type: "object", properties: { profile: { type: "string" } }, required: ["profile"] },
        querystring: textQuery("seconds", "debug", "gc", "node_id", "server_id", "region", "profile"),
      },
    },
    async (request, reply) => {
      const path = (request.params as { profile: string }).profile;
      // Nomad has no index of profiles.
      if (path === "") throw ApiError.notFound("Invalid method");
      const query = request.query as Record<string, string | undefined>;
      const reqType = REQ_TYPES[path] ?? "lookup";
      // As net/http/pprof: a number that does not parse is 0; no duration is 1 s.
      const seconds = atoi(query.seconds) || 1;
      if (!request.identity.allows("", "agent:write")) throw ApiError.forbidden();
      const target = agentTarget(ctx, request, query, "Cannot target node and server simultaneously");
      if (target.kind === "server") return forwardToServer(ctx, request, reply, target.address);
      if (target.kind === "node") {
        const args = {
          ReqType: reqType,
          Profile: reqType === "lookup" ? path : (query.profile ?? ""),
          Seconds: seconds,
          Debug: atoi(query.debug),
          GC: atoi(query.gc),
          NodeID: target.nodeID,
          ServerID: "",
          ...queryOptions(request),
        };
        try {
          const session = await sessionOrForward(ctx, request, reply, target.nodeID);
          if (!session) return reply;
          // The client checks the token itself (agent:write, or its own enable_debug without ACLs).
          const out = (await nodeRpc(session, "Agent.Profile", args)) as {
            Payload?: string | null;
            HTTPHeaders?: Record<string, string> | null;
          } | null;
          return send(reply, {
            // Payload is a []byte: the codec gives it as base64.
            payload: Buffer.from(out?.Payload ?? "", "base64"),
            headers: out?.HTTPHeaders ?? {},
          });
        } catch (err) {
          throw httpErrorOf(err, isNoNodeConn);
        }
      }
      if (!allowsDebug(ctx, request, "agent:write")) throw ApiError.forbidden();
      try {
        if (reqType === "cmdline") return send(reply, cmdline());
        if (reqType === "cpu") return send(reply, await cpuProfile(seconds));
        if (reqType === "trace") throw new ProfileNotServed(TRACE_REFUSAL);
        return send(reply, await lookupProfile(path));
      } catch (err) {
        if (err instanceof ProfileNotFound) throw ApiError.notFound(err.message);
        if (err instanceof ProfileNotServed) throw new ApiError(501, err.message);
        throw new ApiError(500, (err as Error).message);
      }
    },
  );
};

function send(reply: FastifyReply, profile: RuntimeProfile): FastifyReply {
  for (const [name, value] of Object.entries(profile.headers)) reply.header(name, value);
  return reply.send(profile.payload);
}

/** Go's strconv.Atoi with its error dropped, as Nomad's handler reads these: 0 unless a whole decimal number. */
function atoi(text: string | undefined): number {
  if (text === undefined || !/^[+-]?\d{1,18}$/.test(text)) return 0;
  return Number(text);
}
