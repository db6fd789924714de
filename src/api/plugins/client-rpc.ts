import type { FastifyPluginAsync, FastifyReply, FastifyRequest, RequestPayload } from "fastify";
import { packPlain } from "../../codec/envelope-codec.ts";
import { ApiError } from "../api-error.ts";
import { AllocUpdateBatcher } from "../client-rpc/alloc-update-batcher.ts";
import { getAlloc, getAllocs, getClientAllocs } from "../client-rpc/client-allocs.ts";
import {
  claimVolumeRpc,
  csiClaimBody,
  csiUnpublishBody,
  unpublishVolumeRpc,
} from "../client-rpc/csi-claims.ts";
import {
  ackDetach,
  ackDetachBody,
  pendingDetaches,
  pendingDetachesBody,
} from "../client-rpc/csi-detaches.ts";
import { deregister, emitEvents } from "../client-rpc/deregister.ts";
import { register } from "../client-rpc/register.ts";
import { clientReplyJson, replyWritten } from "../client-rpc/reply-json.ts";
import type { RpcContext, RpcHandler } from "../client-rpc/rpc-context.ts";
import {
  clientAllocsBody,
  deregisterBody,
  emitEventsBody,
  getAllocBody,
  getAllocsBody,
  registerBody,
  updateAllocBody,
  updateStatusBody,
} from "../client-rpc/schemas.ts";
import {
  deleteServiceRegistration,
  serviceDeleteByIdBody,
  serviceUpsertBody,
  upsertServiceRegistrations,
} from "../client-rpc/service-registrations.ts";
import { updateAlloc } from "../client-rpc/update-alloc.ts";
import { updateStatus } from "../client-rpc/update-status.ts";
import type { ApiContext } from "../context.ts";
import { captureRawBody, forwardToLeader } from "../forward-to-leader.ts";

/** The client RPCs served, with the JSON schema of their request struct. */
const METHODS: Readonly<Record<string, { schema: object; handler: RpcHandler }>> = {
  "Node.Register": { schema: registerBody, handler: register },
  "Node.UpdateStatus": { schema: updateStatusBody, handler: updateStatus },
  "Node.UpdateAlloc": { schema: updateAllocBody, handler: updateAlloc },
  "Node.GetClientAllocs": { schema: clientAllocsBody, handler: getClientAllocs },
  "Node.Deregister": { schema: deregisterBody, handler: deregister },
  "Node.EmitEvents": { schema: emitEventsBody, handler: emitEvents },
  "Alloc.GetAllocs": { schema: getAllocsBody, handler: getAllocs },
  "Alloc.GetAlloc": { schema: getAllocBody, handler: getAlloc },
  "ServiceRegistration.Upsert": { schema: serviceUpsertBody, handler: upsertServiceRegistrations },
  "ServiceRegistration.DeleteByID": { schema: serviceDeleteByIdBody, handler: deleteServiceRegistration },
  "CSIVolume.Claim": { schema: csiClaimBody, handler: claimVolumeRpc },
  "CSIVolume.Unpublish": { schema: csiUnpublishBody, handler: unpublishVolumeRpc },
  // chronomad's server → client detach calls, as a long poll and its answer (streams/csi-detach.ts).
  "ClientCSI.PendingDetaches": { schema: pendingDetachesBody, handler: pendingDetaches },
  "ClientCSI.AckDetach": { schema: ackDetachBody, handler: ackDetach },
};

/** The client RPC methods served, by Nomad's name (the RPC port serves exactly these through the routes below). */
export const CLIENT_RPC_METHODS: ReadonlySet<string> = new Set(Object.keys(METHODS));

export const MSGPACK = "application/msgpack";

/**
 * Nomad's client-to-server RPCs over HTTP: `PUT /v1/rpc/<Service.Method>`
 * with the request struct as a JSON or msgpack body; the reply struct comes
 * back in the same encoding. Every call is authenticated by the node's own
 * SecretID (see client-rpc/node-auth.ts).
 */
export const clientRpcPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const rc: RpcContext = { api: ctx, batcher: new AllocUpdateBatcher(ctx) };
  app.addHook("onClose", async () => rc.batcher.close());

  for (const [name, { schema, handler }] of Object.entries(METHODS)) {
    app.route({
      method: ["PUT", "POST"],
      url: `/v1/rpc/${name}`,
      schema: { body: schema },
      // A follower passes the bytes on as they came; JSON can be re-encoded
      // from the parsed body, so the leader's own calls skip the copy (and,
      // a callback hook, the promise an async one costs on every call).
      preParsing: (request, reply, payload, done) => {
        if (ctx.leadership.isLeader() && !isMsgpack(request)) return done(null, payload);
        captureRawBody.call(app, request, reply, payload).then(
          (captured) => done(null, captured as RequestPayload),
          (err: Error) => done(err),
        );
      },
      handler: async (request, reply) => {
        // Heartbeat timers, and the alloc update window, live on the leader.
        if (!ctx.leadership.isLeader()) return forwardToLeader(ctx, request, reply);
        return respond(request, reply, await handler(rc, request));
      },
    });
  }
  app.route({
    method: ["PUT", "POST"],
    url: "/v1/rpc/:method",
    schema: { params: { type: "object", properties: { method: { type: "string" } }, required: ["method"] } },
    handler: async (request) => {
      throw ApiError.notFound(`rpc: can't find method ${(request.params as { method: string }).method}`);
    },
  });
};

function respond(request: FastifyRequest, reply: FastifyReply, body: Record<string, unknown>): FastifyReply {
  if (typeof body.Index === "number") reply.header("X-Nomad-Index", String(body.Index));
  if (isMsgpack(request)) return reply.type(MSGPACK).send(Buffer.from(packPlain(body)));
  const json = clientReplyJson(body);
  // Its slab is written again once every reply in it is: a reply's bytes
  // are the socket's until its `finish` (not emitted if the socket fails or
  // closes first: that slab is then left to the GC).
  if (typeof json !== "string") reply.raw.on("finish", () => replyWritten(json));
  return reply.type("application/json; charset=utf-8").send(json);
}

function isMsgpack(request: FastifyRequest): boolean {
  const type = request.headers["content-type"];
  if (typeof type !== "string") return false;
  // Asked twice per call (parsing, replying) with the few values clients send.
  let msgpack = msgpackTypes.get(type);
  if (msgpack === undefined) {
    msgpack = type.split(";")[0]!.trim().toLowerCase() === MSGPACK;
    if (msgpackTypes.size >= 64) msgpackTypes.clear();
    msgpackTypes.set(type, msgpack);
  }
  return msgpack;
}

const msgpackTypes = new Map<string, boolean>();
