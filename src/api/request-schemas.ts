/**
 * JSON schemas shared by the plugins. Query parameters are text on the wire;
 * Nomad ignores the ones an endpoint does not use, so query schemas list
 * names without forbidding others.
 */
export function textQuery(...names: string[]) {
  return {
    type: "object",
    properties: Object.fromEntries(names.map((name) => [name, { type: "string" }])),
  } as const;
}

/** The parameters every Nomad read accepts, besides its own; `at_index` is chronomad's (view.ts). */
export const COMMON_READ_PARAMS = ["index", "wait", "region", "stale", "pretty", "at_index"] as const;

/** The parameters of Nomad's paginated, filtered list endpoints. */
export const LIST_PARAMS = ["namespace", "prefix", "filter", "per_page", "next_token", "reverse"] as const;

/** `:id` in the path. */
export const idParam = {
  type: "object",
  properties: { id: { type: "string" } },
  required: ["id"],
} as const;

/** `:name` in the path. */
export const nameParam = {
  type: "object",
  properties: { name: { type: "string" } },
  required: ["name"],
} as const;

/** The fields of Nomad's WriteRequest that every write body may carry (accepted, not acted on). */
export const WRITE_REQUEST_FIELDS = {
  Region: { type: "string" },
  Namespace: { type: "string" },
  SecretID: { type: "string" },
  AuthToken: { type: "string" },
  IdempotencyToken: { type: "string" },
} as const;
