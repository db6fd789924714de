import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import {
  type CSIVolumeRow,
  csiVolumeKey,
  deregisterRefusal,
  registerRefusal,
  VOLUME_NOT_FOUND,
} from "../../../projections/csi-volumes.ts";
import type {
  CSIVolumeOp,
  CSIVolumeSpec,
  CSIVolumesDeregistered,
  CSIVolumesRegistered,
} from "../../../streams/csi.ts";
import type { AuthenticatedIdentity } from "../../auth/authenticate.ts";
import { volumeJson, volumeStub } from "../../csi/csi-views.ts";
import {
  asCreated,
  createRefusal,
  mergeVolume,
  pluginRefusal,
  type VolumeInput,
  volumeInput,
  volumeInvalid,
  withRequestedTopologies,
} from "../../csi/register-volume.ts";
import { sealVolumeSecrets } from "../../csi/volume-secrets.ts";
import { namespaceIdTokenizer, paginateInSlices, parseListQuery } from "../../query/paginator.ts";
import { queryBool } from "../../query/query-bool.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { ALL_NAMESPACES, badRequestOnQueryError } from "../list-pages.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import {
  COMMON_READ_PARAMS,
  idParam,
  LIST_PARAMS,
  textQuery,
  WRITE_REQUEST_FIELDS,
} from "../request-schemas.ts";

const TABLE = "csi_volumes";
const listQuery = textQuery(...LIST_PARAMS, "type", "plugin_id", "node_id", ...COMMON_READ_PARAMS);
const readQuery = textQuery("namespace", ...COMMON_READ_PARAMS);
const writeQuery = textQuery("namespace", "region");
const deleteQuery = textQuery("namespace", "region", "force");

/** Nomad's CSIVolumeRegisterRequest / CSIVolumeCreateRequest: `{"Volumes": [CSIVolume]}`; other fields ignored. */
const volumesBody = {
  type: "object",
  properties: {
    Volumes: { type: ["array", "null"], items: { type: "object" } },
    ...WRITE_REQUEST_FIELDS,
  },
} as const;

type Query = Record<string, string | undefined>;
type Loose = Readonly<Record<string, unknown>>;

const namespaceOf = (request: FastifyRequest) => (request.query as Query).namespace || "default";

/** Nomad's CSIVolume.List: any of these in the namespace. */
const LIST_CAPS = ["csi-list-volume", "csi-read-volume", "csi-mount-volume", "list-jobs"];
/** Nomad's CSIVolume.Get: any of these, or a client's own identity. */
const READ_CAPS = ["csi-read-volume", "csi-mount-volume", "read-job"];

const anyOf = (identity: AuthenticatedIdentity, namespace: string, caps: readonly string[]) =>
  caps.some((c) => identity.allows(namespace, c));

/**
 * Nomad's CSI volume endpoints (command/agent/csi_endpoint.go over
 * nomad/csi_endpoint.go): list, read, register, create and deregister.
 * Claims are written by clients and the volume watcher (csi-release).
 */
export const csiVolumesPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.get("/v1/volumes", { schema: { querystring: listQuery } }, async (request, reply) => {
    const q = request.query as Query;
    // Nomad: no type is an empty list, any other type than csi is null (host volumes are a later Nomad's).
    if (q.type === undefined || q.type === "")
      return blockingQuery(ctx, request, reply, [TABLE], () => ({ index: 1, body: [] }));
    if (q.type !== "csi")
      return blockingQuery(ctx, request, reply, [TABLE], () => ({ index: 1, body: null }));
    const namespace = namespaceOf(request);
    const { identity } = request;
    if (namespace !== ALL_NAMESPACES && !anyOf(identity, namespace, LIST_CAPS)) throw ApiError.forbidden();
    const prefix = q.prefix ?? "";
    const { csiVolumes, csiPlugins } = request.view.tables;
    return blockingQuery(ctx, request, reply, [TABLE, "csi_plugins"], async () => {
      const page = await badRequestOnQueryError(() => {
        const list = parseListQuery(q);
        let rows: CSIVolumeRow[];
        if (q.node_id) rows = csiVolumes.by("node", q.node_id);
        else if (q.plugin_id) rows = csiVolumes.by("plugin", q.plugin_id);
        else if (namespace === ALL_NAMESPACES) rows = [...csiVolumes.all()];
        else rows = [...csiVolumes.withPrefix(csiVolumeKey(namespace, prefix))];
        rows = rows.filter(
          (v) =>
            (namespace === ALL_NAMESPACES || v.Namespace === namespace) &&
            v.ID.startsWith(prefix) &&
            (!q.plugin_id || v.PluginID === q.plugin_id),
        );
        rows.sort((a, b) => namespaceIdTokenizer.compare(a, { namespace: b.Namespace, id: b.ID }));
        if (list.reverse) rows.reverse();
        const stubs = rows.map(
          (v) => volumeStub(v, csiPlugins.get(v.PluginID)) as Loose & { Namespace: string; ID: string },
        );
        return paginateInSlices(stubs, {
          perPage: list.perPage,
          nextToken: list.nextToken,
          reverse: list.reverse,
          filter: list.filter,
          allow: (s) => anyOf(identity, s.Namespace, LIST_CAPS),
          tokenizer: namespaceIdTokenizer,
        });
      });
      return {
        index: Math.max(1, csiVolumes.index, csiPlugins.index),
        body: page.items,
        nextToken: page.nextToken,
      };
    });
  });

  const register = (op: CSIVolumeOp) => async (request: FastifyRequest, reply: FastifyReply) => {
    const body = request.body as { Volumes?: readonly Loose[] | null } | null;
    const volumes = body?.Volumes ?? [];
    if (volumes.length === 0) throw ApiError.badRequest("missing volume definition");
    const namespace = namespaceOf(request);
    // As Nomad's handlers, the path's ID is not compared with the body's volumes.
    const inputs = volumes.map((raw) => volumeInput(raw, namespace));
    const { identity } = request;
    // Nomad: csi-write-volume and plugin read.
    if (!identity.allows("", "plugin:read")) throw ApiError.forbidden();
    for (const v of inputs) if (!identity.allows(v.Namespace, "csi-write-volume")) throw ApiError.forbidden();
    const specs = prepareVolumes(ctx, inputs, op);
    const data: CSIVolumesRegistered = { Op: op, Volumes: specs };
    const index = await commit(ctx, identity, [{ type: "CSIVolumesRegistered", v: 1, data }]);
    reply.header("X-Nomad-Index", String(index));
    if (op === "register") return reply.send();
    // Nomad's CSIVolumeCreateResponse: the volumes as created.
    const tables = ctx.tables;
    return {
      Volumes: specs.map((s) => {
        const row = tables.csiVolumes.get(csiVolumeKey(s.Namespace, s.ID));
        return row ? volumeJson(row, tables) : null;
      }),
      Index: index,
      LastIndex: index,
      KnownLeader: true,
      LastContact: 0,
    };
  };

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/volumes",
    schema: { body: volumesBody, querystring: writeQuery },
    handler: register("register"),
  });
  refuseOtherMethods(app, "/v1/volumes", ["GET", "PUT", "POST"]);

  app.get(
    "/v1/volume/csi/:id",
    { schema: { params: idParam, querystring: readQuery } },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const namespace = namespaceOf(request);
      const { identity } = request;
      if (identity.actor.kind !== "node" && !anyOf(identity, namespace, READ_CAPS))
        throw ApiError.forbidden();
      const tables = request.view.tables;
      const body = await blockingQuery(ctx, request, reply, [TABLE, "csi_plugins", "allocs"], () => {
        const row = tables.csiVolumes.get(csiVolumeKey(namespace, id));
        return {
          index: Math.max(1, row?.ModifyIndex ?? tables.csiVolumes.index),
          body: row ? volumeJson(row, tables) : null,
        };
      });
      if (!body) throw ApiError.notFound(VOLUME_NOT_FOUND);
      return body;
    },
  );
  app.route({
    method: ["PUT", "POST"],
    url: "/v1/volume/csi/:id",
    schema: { params: idParam, body: volumesBody, querystring: writeQuery },
    handler: register("register"),
  });
  app.delete(
    "/v1/volume/csi/:id",
    { schema: { params: idParam, querystring: deleteQuery } },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const namespace = namespaceOf(request);
      const force = badRequestOnQueryError(() => queryBool(request.query as Query, "force")) ?? false;
      if (!request.identity.allows(namespace, "csi-write-volume")) throw ApiError.forbidden();
      const refusal = deregisterRefusal(
        ctx.tables.csiVolumes.get(csiVolumeKey(namespace, id)),
        id,
        force,
        ctx.tables.allocs,
      );
      if (refusal) throw new ApiError(refusal.code, refusal.reason);
      const data: CSIVolumesDeregistered = { Namespace: namespace, VolumeIDs: [id], Force: force };
      const index = await commit(ctx, request.identity, [{ type: "CSIVolumesDeregistered", v: 1, data }]);
      reply.header("X-Nomad-Index", String(index));
      return reply.send();
    },
  );
  refuseOtherMethods(app, "/v1/volume/csi/:id", ["GET", "PUT", "POST", "DELETE"]);

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/volume/csi/:id/create",
    schema: { params: idParam, body: volumesBody, querystring: writeQuery },
    handler: register("create"),
  });
  refuseOtherMethods(app, "/v1/volume/csi/:id/create", ["PUT", "POST"]);
};

/**
 * Nomad's Register / Create checks, in its order, for every volume before
 * anything is written: Validate, the merge onto a stored volume (seed 004),
 * the plugin (and, for create, a controller that can create), then the
 * state store's rules (namespace, identity, in use); then the secrets are
 * sealed. Any refusal is a 4xx naming the volume and nothing is appended.
 */
function prepareVolumes(ctx: ApiContext, inputs: readonly VolumeInput[], op: CSIVolumeOp): CSIVolumeSpec[] {
  const { csiVolumes, csiPlugins, namespaces, allocs } = ctx.tables;
  const seen = new Set<string>();
  return inputs.map((input) => {
    const invalid = volumeInvalid(input);
    if (invalid) throw ApiError.badRequest(invalid);
    const key = csiVolumeKey(input.Namespace, input.ID);
    if (seen.has(key)) throw ApiError.badRequest(`volume ${input.ID} is listed twice`);
    seen.add(key);
    const existing = csiVolumes.get(key);
    let v: VolumeInput;
    if (existing) {
      const merged = mergeVolume(existing, input);
      if (typeof merged === "string") throw ApiError.badRequest(merged);
      v = merged;
    } else {
      v = op === "create" ? asCreated(input) : withRequestedTopologies(input);
    }
    const plugin = csiPlugins.get(v.PluginID);
    const pluginProblem = op === "create" && !existing ? createRefusal(v, plugin) : pluginRefusal(v, plugin);
    if (pluginProblem) throw ApiError.badRequest(pluginProblem);
    const { Secrets, ...fields } = v;
    const spec: CSIVolumeSpec = {
      ...fields,
      // Nomad's pluginValidateVolume copies the plugin's provider onto the volume.
      Provider: plugin?.Provider ?? "",
      ProviderVersion: plugin?.Version ?? "",
      SealedSecrets: sealVolumeSecrets(ctx, Secrets),
    };
    const refusal = registerRefusal(spec, existing, { namespaces, allocs });
    if (refusal) throw new ApiError(refusal.code, refusal.reason);
    return spec;
  });
}
