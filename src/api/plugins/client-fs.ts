import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { nodeRpc, sessionOrForward } from "../../rpc/client-calls.ts";
import { ApiError } from "../api-error.ts";
import {
  allocOf,
  httpErrorOf,
  isNoNodeConn,
  isNoSuchFile,
  isUnknownAllocation,
  queryOptions,
  RpcFailure,
  requireNodeForRpc,
  streamTarget,
} from "../client-call-checks.ts";
import { parseBool, parseInt64, queryText } from "../client-call-params.ts";
import { type StreamResponseOptions, streamFromNode } from "../client-stream-response.ts";
import type { ApiContext } from "../context.ts";
import { COMMON_READ_PARAMS, idParam, textQuery } from "../request-schemas.ts";

const fsQuery = textQuery(
  "path",
  "offset",
  "limit",
  "origin",
  "follow",
  "plain",
  "task",
  "type",
  "namespace",
  ...COMMON_READ_PARAMS,
);
const schema = { params: idParam, querystring: fsQuery } as const;

const fsNotFound = (m: string) => isNoNodeConn(m) || isUnknownAllocation(m) || isNoSuchFile(m);

/**
 * `/v1/client/fs/*`: an allocation's files and task logs, served by the
 * client agent that runs it (command/agent/fs_endpoint.go): the server makes
 * Nomad's checks (nomad/client_fs_endpoint.go), then calls the agent over
 * the session it opened to a server (FileSystem.List and .Stat), or streams
 * from it (FileSystem.Stream and .Logs).
 */
export const clientFsPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const unary = (method: string, answer: "Files" | "Info") =>
    async function handler(request: FastifyRequest, reply: FastifyReply, args: Record<string, unknown>) {
      const { id } = request.params as { id: string };
      try {
        const alloc = allocOf(request, id);
        if (!request.identity.allows(alloc.Namespace, "read-fs")) throw new RpcFailure("Permission denied");
        requireNodeForRpc(request, alloc.NodeID);
        const session = await sessionOrForward(ctx, request, reply, alloc.NodeID);
        if (!session) return reply;
        const out = await nodeRpc(session, method, { AllocID: id, ...args, ...queryOptions(request) });
        return fileInfos((out as Record<string, unknown> | null)?.[answer] ?? null);
      } catch (err) {
        throw httpErrorOf(err, fsNotFound);
      }
    };
  const list = unary("FileSystem.List", "Files");
  const stat = unary("FileSystem.Stat", "Info");

  /** Nomad's streaming calls: the server's checks, then the agent's frames as the body. */
  const stream = (
    request: FastifyRequest,
    reply: FastifyReply,
    method: "FileSystem.Stream" | "FileSystem.Logs",
    args: Record<string, unknown>,
    allowed: (namespace: string) => boolean,
    options: StreamResponseOptions,
  ): Promise<FastifyReply> => {
    const { id } = request.params as { id: string };
    const target = () => streamTarget(request, id, allowed).NodeID;
    return streamFromNode(ctx, request, reply, { target, method, args: { AllocID: id, ...args } }, options);
  };
  const readFs = (request: FastifyRequest) => (ns: string) => request.identity.allows(ns, "read-fs");

  app.get("/v1/client/fs/ls/:id", { schema }, async (request, reply) => {
    const path = queryText(request.query, "path") || "/";
    return list(request, reply, { Path: path });
  });

  app.get("/v1/client/fs/stat/:id", { schema }, async (request, reply) => {
    const path = queryText(request.query, "path");
    if (path === "") throw ApiError.badRequest("must provide a file name");
    return stat(request, reply, { Path: path });
  });

  app.get("/v1/client/fs/readat/:id", { schema }, async (request, reply) =>
    untrusted(reply, async () => {
      const q = request.query;
      const path = queryText(q, "path");
      if (path === "") throw ApiError.badRequest("must provide a file name");
      const offset = parseInt64(queryText(q, "offset"));
      if (!offset.ok) throw ApiError.badRequest(`error parsing offset: ${offset.error}`);
      let limit = 0;
      const limitText = queryText(q, "limit");
      if (limitText !== "") {
        const parsed = parseInt64(limitText);
        if (!parsed.ok) throw ApiError.badRequest(`error parsing limit: ${parsed.error}`);
        limit = parsed.value;
      }
      const args = {
        Path: path,
        Offset: offset.value,
        Origin: "start",
        Limit: limit,
        PlainText: true,
        Follow: false,
      };
      return stream(request, reply, "FileSystem.Stream", args, readFs(request), { untrusted: true });
    }),
  );

  app.get("/v1/client/fs/cat/:id", { schema }, async (request, reply) =>
    untrusted(reply, async () => {
      const path = queryText(request.query, "path");
      if (path === "") throw ApiError.badRequest("must provide a file name");
      const args = { Path: path, Offset: 0, Origin: "start", Limit: 0, PlainText: true, Follow: false };
      return stream(request, reply, "FileSystem.Stream", args, readFs(request), { untrusted: true });
    }),
  );

  app.get("/v1/client/fs/stream/:id", { schema }, async (request, reply) => {
    const q = request.query;
    const path = queryText(q, "path");
    if (path === "") throw ApiError.badRequest("must provide a file name");
    let follow = true;
    const followText = queryText(q, "follow");
    if (followText !== "") {
      const parsed = parseBool(followText);
      if (!parsed.ok) throw ApiError.badRequest(`failed to parse follow field to boolean: ${parsed.error}`);
      follow = parsed.value;
    }
    const offset = offsetParam(queryText(q, "offset"));
    const origin = originOf(queryText(q, "origin"));
    const args = { Path: path, Offset: offset, Origin: origin, Limit: 0, PlainText: false, Follow: follow };
    return stream(request, reply, "FileSystem.Stream", args, readFs(request), {});
  });

  app.get("/v1/client/fs/logs/:id", { schema }, async (request, reply) => {
    const q = request.query;
    const task = queryText(q, "task");
    if (task === "") throw ApiError.badRequest("must provide task name");
    const follow = boolParam(queryText(q, "follow"), "follow");
    const plain = boolParam(queryText(q, "plain"), "plain");
    const logType = queryText(q, "type");
    if (logType !== "stdout" && logType !== "stderr") {
      throw ApiError.badRequest("must provide log type (stdout/stderr)");
    }
    const offset = offsetParam(queryText(q, "offset"));
    const origin = originOf(queryText(q, "origin"));
    // Nomad sets the type before the call, so its errors carry it too.
    const contentType = plain ? "text/plain" : "application/json";
    const args = {
      Task: task,
      LogType: logType,
      Offset: offset,
      Origin: origin,
      PlainText: plain,
      Follow: follow,
    };
    const readLogs = (ns: string) =>
      request.identity.allows(ns, "read-fs") || request.identity.allows(ns, "read-logs");
    try {
      return await stream(request, reply, "FileSystem.Logs", args, readLogs, { contentType });
    } catch (err) {
      if (!(err instanceof ApiError) || reply.sent) throw err;
      // A Buffer, so that the type goes out as set (a string would get a charset added).
      return reply.status(err.status).type(contentType).send(Buffer.from(err.message));
    }
  });
};

/**
 * Nomad serves file contents through a writer that commits its 200 before
 * the handler's error is written (helper/noxssrw), so every error of cat and
 * readat is a 200 whose body is the error's text.
 */
async function untrusted(reply: FastifyReply, serve: () => Promise<FastifyReply>): Promise<FastifyReply> {
  try {
    return await serve();
  } catch (err) {
    if (!(err instanceof ApiError) || reply.sent) throw err;
    return reply.status(200).type("text/plain; charset=utf-8").send(err.message);
  }
}

function originOf(origin: string): "start" | "end" {
  if (origin === "" || origin === "start") return "start";
  if (origin === "end") return "end";
  throw ApiError.badRequest("origin must be start or end");
}

/** Nomad's offset: 0 when absent, a 64-bit integer otherwise. */
function offsetParam(text: string): number {
  if (text === "") return 0;
  const parsed = parseInt64(text);
  if (!parsed.ok) throw ApiError.badRequest(`error parsing offset: ${parsed.error}`);
  return parsed.value;
}

function boolParam(text: string, name: string): boolean {
  if (text === "") return false;
  const parsed = parseBool(text);
  if (!parsed.ok) throw ApiError.badRequest(`failed to parse ${name} field to boolean: ${parsed.error}`);
  return parsed.value;
}

/** AllocFileInfo as Nomad's JSON has it: ContentType only when set (`json:",omitempty"`). */
function fileInfos(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(fileInfos);
  if (typeof value !== "object" || value === null) return value;
  const info = { ...(value as Record<string, unknown>) };
  if (info.ContentType === "" || info.ContentType === null) delete info.ContentType;
  return info;
}
