import type { FastifyPluginAsync } from "fastify";
import type { RootKeyRow } from "../../../projections/root-keys.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";

export const JWKS_PATH = "/.well-known/jwks.json";
const OIDC_PATH = "/.well-known/openid-configuration";

/** Nomad's jwksMinMaxAge: the least a JWKS consumer is told to cache it. */
const MIN_MAX_AGE_MS = 15 * 60_000;
/** Nomad's default root_key_rotation_threshold: a key set is not expected to change sooner. */
const ROTATION_THRESHOLD_MS = 720 * 3_600_000;

const readQuery = {
  type: "object",
  properties: { index: { type: "string" }, wait: { type: "string" }, stale: { type: "string" } },
} as const;

/** One JWK as go-jose marshals an Ed25519 public key, in its field order. */
function jwk(row: RootKeyRow) {
  const k = row.SigningKey;
  return { use: "sig", kty: "OKP", kid: row.KeyID, crv: k.Curve, alg: k.Algorithm, x: k.X };
}

/**
 * `/.well-known/jwks.json` (Nomad 1.7+): the public keys that verify
 * workload identities, for third parties and for Nomad's own clients, which
 * wait for it to list a key before they call anything. Public, as in Nomad.
 * Served from the log's public keys, so every server answers the same
 * whether or not it holds the key material.
 */
export const wellKnownPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.get(JWKS_PATH, { schema: { querystring: readQuery } }, async (request, reply) => {
    const { rootKeys } = request.view.tables;
    let newest = 0;
    const body = await blockingQuery(ctx, request, reply, ["root_keys"], () => {
      // Deprecated keys verify nothing any more; inactive ones still verify
      // identities they signed before a rotation.
      const live = [...rootKeys.all()].filter((row) => row.State !== "deprecated");
      newest = Math.max(0, ...live.map((row) => row.CreateTime / 1e6));
      return { index: rootKeys.index, body: { keys: live.map(jwk) } };
    });
    if (newest > 0) {
      const seconds = Math.floor(maxAgeMs(newest + ROTATION_THRESHOLD_MS, Date.now()) / 1000);
      reply.header("Cache-Control", `max-age=${seconds}`);
    }
    return body;
  });
  refuseOtherMethods(app, JWKS_PATH, ["GET"]);

  const discovery = ctx.config.oidcIssuer ? oidcDiscovery(ctx.config.oidcIssuer) : undefined;
  app.get(OIDC_PATH, { schema: { querystring: readQuery } }, async () => {
    if (!discovery) throw ApiError.notFound("OIDC Discovery endpoint disabled");
    return discovery;
  });
  refuseOtherMethods(app, OIDC_PATH, ["GET"]);
};

/**
 * Nomad's helper.ExpiryToRenewTime: half the time left before the key set
 * may change, at least the minimum, plus up to a tenth of random stagger so
 * consumers do not all come back at once.
 */
function maxAgeMs(expiresAt: number, now: number): number {
  const half = (expiresAt - now) / 2;
  const base = Math.max(half, MIN_MAX_AGE_MS);
  return base + Math.random() * (base / 10);
}

/** Nomad's structs.NewOIDCDiscoveryConfig, for the signing algorithm this server uses. */
function oidcDiscovery(issuer: string) {
  const jwksUri = new URL(issuer);
  jwksUri.pathname = `${jwksUri.pathname.replace(/\/+$/, "")}${JWKS_PATH}`;
  return {
    issuer,
    jwks_uri: jwksUri.toString(),
    id_token_signing_alg_values_supported: ["EdDSA"],
    response_types_supported: ["code"],
    subject_types_supported: ["public"],
  };
}
