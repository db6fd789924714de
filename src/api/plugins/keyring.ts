import type { FastifyPluginAsync } from "fastify";
import type { RootKeyRow } from "../../../projections/root-keys.ts";
import { parseGoBool } from "../../query/filter/go-strconv.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";

/** Nomad's api.RootKeyMeta, field for field. */
export function rootKeyMeta(row: RootKeyRow) {
  return {
    KeyID: row.KeyID,
    Algorithm: row.Algorithm,
    CreateTime: row.CreateTime,
    CreateIndex: row.CreateIndex,
    ModifyIndex: row.ModifyIndex,
    State: row.State,
    PublishTime: row.PublishTime,
  };
}

const readQuery = {
  type: "object",
  properties: { index: { type: "string" }, wait: { type: "string" }, stale: { type: "string" } },
} as const;

const rotateQuery = {
  type: "object",
  properties: { algo: { type: "string" }, full: { type: "string" }, publish_time: { type: "string" } },
} as const;

const deleteRequest = {
  params: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
  querystring: { type: "object", properties: { force: { type: "string" } } },
} as const;

// Rotation, rekeying and deletion come with key GC and variables (issue 18):
// until then a clear refusal rather than a write that half happens.
const NOT_YET = (what: string) =>
  new ApiError(501, `${what} is not implemented yet (keyring rotation, rekey and key deletion: issue 18)`);

/** `/v1/operator/keyring/*`, as Nomad's KeyringRequest routes it. */
export const keyringPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const keys = "/v1/operator/keyring/keys";
  app.get(keys, { schema: { querystring: readQuery } }, async (request, reply) => {
    // Nomad 1.7+: the operator "keyring-read" capability, which operator read grants.
    if (!request.identity.allows("*", "management")) throw ApiError.forbidden();
    const { rootKeys } = request.view.tables;
    return blockingQuery(ctx, request, reply, ["root_keys"], () => ({
      index: rootKeys.index,
      body: [...rootKeys.all()].map(rootKeyMeta),
    }));
  });
  refuseOtherMethods(app, keys, ["GET"]);

  const rotate = "/v1/operator/keyring/rotate";
  for (const method of ["PUT", "POST"] as const) {
    app.route({
      method,
      url: rotate,
      schema: { querystring: rotateQuery },
      handler: async (request) => {
        if (!request.identity.allows("*", "management")) throw ApiError.forbidden();
        throw NOT_YET("keyring rotation");
      },
    });
  }
  refuseOtherMethods(app, rotate, ["PUT", "POST"]);

  const key = "/v1/operator/keyring/key/:id";
  app.delete(key, { schema: deleteRequest }, async (request) => {
    const { force } = request.query as { force?: string };
    // Nomad parses `force` before anything else, with its own status and words.
    if (force !== undefined && !parseGoBool(force).ok) throw new ApiError(422, "invalid force parameter");
    if (!request.identity.allows("*", "management")) throw ApiError.forbidden();
    throw NOT_YET("root key deletion");
  });
  refuseOtherMethods(app, key, ["DELETE"]);
};
