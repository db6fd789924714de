import type { FastifyPluginAsync } from "fastify";
import {
  ACTIVE_KEY_DELETE_REFUSAL,
  type RootKeyRow,
  rotationBlockedBy,
} from "../../../projections/root-keys.ts";
import { AES256_GCM } from "../../../streams/keyring.ts";
import { rootKeyDeleteDrafts } from "../../gc/collect-root-keys.ts";
import {
  createRootKey,
  custodyOf,
  discardRootKey,
  rootKeyCreatedDraft,
} from "../../keyring/create-root-key.ts";
import { registerKeyringMetrics } from "../../keyring/keyring-metrics.ts";
import { parseGoBool } from "../../query/filter/go-strconv.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { forwardToLeader } from "../forward-to-leader.ts";
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

/** `?algo=`: Nomad takes only its one algorithm (and ignores others; here they are refused). */
function checkAlgorithm(algo: string | undefined): void {
  if (algo === undefined || algo === "" || algo === AES256_GCM) return;
  throw new ApiError(
    400,
    `unsupported root key algorithm ${JSON.stringify(algo)}: the only one is ${AES256_GCM}`,
  );
}

/**
 * `?full`: Nomad rekeys when the parameter is present at all; a value is
 * read with Go's ParseBool, so `full=false` does not start a rekey.
 */
function fullOf(full: string | undefined): boolean {
  if (full === undefined) return false;
  if (full === "") return true;
  const parsed = parseGoBool(full);
  if (!parsed.ok)
    throw new ApiError(400, `invalid full parameter ${JSON.stringify(full)}: a boolean, or none`);
  return parsed.value;
}

/** `/v1/operator/keyring/*`, as Nomad's KeyringRequest routes it. */
export const keyringPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  registerKeyringMetrics(ctx.metrics, ctx.tables, ctx.keyring);

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

  // Nomad's Keyring.Rotate: the leader creates the key and keeps its
  // material before the record is written, so the server that signs and
  // rekeys holds it even without a cluster KEK to carry it in the log.
  const rotate = "/v1/operator/keyring/rotate";
  for (const method of ["PUT", "POST"] as const) {
    app.route({
      method,
      url: rotate,
      schema: { querystring: rotateQuery },
      handler: async (request, reply) => {
        const query = request.query as { algo?: string; full?: string };
        checkAlgorithm(query.algo);
        const full = fullOf(query.full);
        if (!request.identity.allows("*", "management")) throw ApiError.forbidden();
        if (!ctx.leadership.isLeader()) return forwardToLeader(ctx, request, reply);
        const blocked = rotationBlockedBy(ctx.tables.rootKeys);
        if (blocked) throw new ApiError(409, blocked);
        const custody = custodyOf(ctx.keyring);
        const data = await createRootKey(custody, {
          nowMs: ctx.clock.now(),
          onlyIfNoActiveKey: false,
          rekey: full,
        });
        const keyId = data.Meta.KeyID;
        let index: number;
        try {
          index = await commit(ctx, request.identity, [rootKeyCreatedDraft(data)]);
        } catch (err) {
          // Refused at apply (a rekey started meanwhile): no server will ever need it.
          if (err instanceof ApiError) await discardRootKey(custody, keyId);
          throw err;
        }
        const row = ctx.tables.rootKeys.get(keyId);
        if (!row) throw new ApiError(500, `root key ${keyId} was written but is not in the keyring`);
        request.log.info({ keyId, full, index }, "root key rotated");
        reply.header("X-Nomad-Index", String(index));
        // Nomad's KeyringRotateRootKeyResponse.
        return { Key: rootKeyMeta(row), Index: index };
      },
    });
  }
  refuseOtherMethods(app, rotate, ["PUT", "POST"]);

  const key = "/v1/operator/keyring/key/:id";
  app.delete(key, { schema: deleteRequest }, async (request, reply) => {
    const { force } = request.query as { force?: string };
    // Nomad parses `force` before anything else, with its own status and words.
    if (force !== undefined && !parseGoBool(force).ok) throw new ApiError(422, "invalid force parameter");
    if (!request.identity.allows("*", "management")) throw ApiError.forbidden();
    // Nomad's root key IDs are looked up lowercased.
    const keyId = (request.params as { id: string }).id.toLowerCase();
    if (keyId === "") throw new ApiError(400, "root key ID is required");
    const row = ctx.tables.rootKeys.get(keyId);
    // Nomad's Keyring.Delete: a missing key is no error, and nothing is written.
    if (!row) {
      reply.header("X-Nomad-Index", "0");
      return { Index: 0 };
    }
    if (row.State === "active") throw new ApiError(400, ACTIVE_KEY_DELETE_REFUSAL);
    // Every server forgets the material once the record is applied (src/keyring/root-key-material-sync.ts).
    const index = await commit(ctx, request.identity, rootKeyDeleteDrafts([keyId]));
    reply.header("X-Nomad-Index", String(index));
    return { Index: index };
  });
  refuseOtherMethods(app, key, ["DELETE"]);
};
