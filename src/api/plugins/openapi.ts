import swagger from "@fastify/swagger";
import type { FastifyInstance, FastifySchema } from "fastify";

/** Where the document is served. */
export const OPENAPI_PATH = "/v1/openapi.json";

/** The name a trailing fastify wildcard (`/v1/var/*`) has in the document. */
const WILDCARD_PARAM = "path";

/**
 * An OpenAPI 3 document of the HTTP API, built by @fastify/swagger from the
 * JSON schemas (params, querystring, body) that the routes validate their
 * requests with, so the document cannot drift from what the server accepts.
 * It is what the fuzz job (scripts/fuzz.sh) generates its requests from.
 *
 * Called on the root instance before any route is added: @fastify/swagger
 * learns the routes from an `onRoute` hook, which sees only the routes added
 * after it, and only in its own encapsulation context (hence a plain call,
 * not an encapsulated `app.register` of this function).
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      // 3.0 rather than 3.1: the version tools (schemathesis among them)
      // support best; @fastify/swagger turns `type: [..., "null"]` into
      // `nullable` for it.
      openapi: "3.0.3",
      info: {
        title: "chronomad HTTP API",
        description: "HashiCorp Nomad's HTTP API as chronomad serves it, with chronomad's additions.",
        // The API's version, as in its paths; not the package's.
        version: "v1",
      },
    },
    transform: ({ schema, url }) => {
      const documented = schema?.body === undefined ? schema : { ...schema, body: openObjects(schema.body) };
      return url.endsWith("/*") ? wildcardAsPathParam(url, documented) : { schema: documented, url };
    },
  });
  app.get(OPENAPI_PATH, async (_request, reply) => reply.type("application/json").send(app.swagger()));
}

/**
 * A trailing fastify wildcard as an OpenAPI path parameter: @fastify/swagger
 * would write `/v1/var/*` as `/v1/var/{*}`, whose parameter name `*` tools
 * refuse. OpenAPI has no parameter spanning segments; `{path}` stands for the
 * rest of the URL, "/" included (`/v1/var/a/b` is the variable `a/b`; a client
 * that escapes the "/" as %2F reaches the same variable, fastify decoding it).
 */
function wildcardAsPathParam(
  url: string,
  schema: FastifySchema | undefined,
): { schema: FastifySchema; url: string } {
  const params = {
    type: "object",
    properties: {
      [WILDCARD_PARAM]: {
        type: "string",
        description: 'the rest of the URL path, which may hold "/" (it spans segments)',
      },
    },
    required: [WILDCARD_PARAM],
  };
  return { schema: { ...schema, params }, url: `${url.slice(0, -1)}:${WILDCARD_PARAM}` };
}

/**
 * A copy of a body schema without `additionalProperties: false`. Whether an
 * unknown body field is dropped or refused is the validator's business
 * (build-api.ts; Nomad's decoders ignore them); the document promises
 * neither, so a client or fuzzer does not take a body with an extra field
 * for one the server must refuse. The route's own schema, which validates,
 * is left as it is.
 */
function openObjects(schema: FastifySchema["body"]): unknown {
  if (Array.isArray(schema)) return schema.map(openObjects);
  if (schema === null || typeof schema !== "object") return schema;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "additionalProperties" && value === false) continue;
    copy[key] = openObjects(value);
  }
  return copy;
}
