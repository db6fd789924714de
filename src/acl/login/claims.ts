/**
 * Claims of a validated login token → the data binding rules see (Nomad's
 * `lib/auth/claims.go` and `identity.go`).
 *
 * An auth method maps claims to names: `ClaimMappings` gives single values
 * (`value.<name>` in selectors and bind names), `ListClaimMappings` gives
 * lists (`list.<name>` in selectors). A mapping's key is a claim name, or a
 * JSON Pointer into the claims when it starts with `/`.
 */

/** Nomad's ACLAuthClaims as go-bexpr sees it: `value.<name>` and `list.<name>`. */
export interface AuthClaims {
  readonly value: Readonly<Record<string, string>>;
  readonly list: Readonly<Record<string, readonly string[]>>;
}

/** The part of an auth method's config that claims extraction reads. */
export interface ClaimMappingConfig {
  readonly ClaimMappings: Readonly<Record<string, string>>;
  readonly ListClaimMappings: Readonly<Record<string, string>>;
}

/** Claims that the mappings cannot turn into strings; the login fails with this message. */
export class ClaimsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ClaimsError";
  }
}

export type Claims = Readonly<Record<string, unknown>>;

/**
 * Nomad's SelectorData: userinfo claims merged over the ID token's (OIDC),
 * the ID token's `iss` and `sub` kept, then the mappings applied.
 */
export function selectorData(config: ClaimMappingConfig, idClaims: Claims, userClaims?: Claims): AuthClaims {
  let all: Claims = idClaims;
  if (userClaims && Object.keys(userClaims).length > 0) {
    const merged: Record<string, unknown> = { ...idClaims, ...userClaims };
    if (Object.hasOwn(idClaims, "iss")) merged.iss = idClaims.iss;
    if (Object.hasOwn(idClaims, "sub")) merged.sub = idClaims.sub;
    all = merged;
  }
  return {
    value: extractValues(all, config.ClaimMappings),
    list: extractLists(all, config.ListClaimMappings),
  };
}

/**
 * Nomad's Identity.ClaimMappings: the variables a BindName may interpolate,
 * `value.<name>` for every ClaimMappings target, `""` when the token lacked
 * the claim (so the template still evaluates).
 */
export function interpolationVars(config: ClaimMappingConfig, claims: AuthClaims): Record<string, string> {
  const vars: Record<string, string> = Object.create(null);
  for (const target of Object.values(config.ClaimMappings)) vars[`value.${target}`] = "";
  for (const [target, v] of Object.entries(claims.value)) vars[`value.${target}`] = v;
  return vars;
}

/**
 * Go ranges over a map in random order, so when two sources map to one
 * target Nomad keeps either; here the sources are read sorted, and the last
 * one wins, every time.
 */
function sortedMappings(mappings: Readonly<Record<string, string>>): [string, string][] {
  return Object.entries(mappings).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function extractValues(all: Claims, mappings: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [source, target] of sortedMappings(mappings)) {
    const raw = getClaim(all, source);
    if (raw === undefined || raw === null) continue;
    const s = stringifyClaim(raw);
    if (s === undefined) {
      throw new ClaimsError(
        `error converting claim '${source}' to string from unknown type ${goTypeName(raw)}`,
      );
    }
    out[target] = s;
  }
  return out;
}

function extractLists(all: Claims, mappings: Readonly<Record<string, string>>): Record<string, string[]> {
  const out: Record<string, string[]> = Object.create(null);
  for (const [source, target] of sortedMappings(mappings)) {
    const raw = getClaim(all, source);
    if (raw === undefined || raw === null) continue;
    // Providers often send a one-element list as the bare element.
    const items = Array.isArray(raw) ? raw : isScalar(raw) ? [raw] : undefined;
    if (items === undefined) {
      throw new ClaimsError(`${JSON.stringify(source)} list claim could not be converted to string list`);
    }
    const list: string[] = [];
    for (const item of items) {
      const s = stringifyClaim(item);
      if (s === undefined) {
        throw new ClaimsError(
          `value ${goValueText(item)} in ${JSON.stringify(source)} list claim could not be parsed as string`,
        );
      }
      if (s !== "") list.push(s);
    }
    out[target] = list;
  }
  return out;
}

/**
 * A claim by name, or by JSON Pointer (RFC 6901, as mitchellh/pointerstructure
 * reads it) when the name starts with `/`. A pointer that leads nowhere is a
 * missing claim, not an error.
 */
export function getClaim(all: Claims, source: string): unknown {
  if (!source.startsWith("/")) return Object.hasOwn(all, source) ? all[source] : undefined;
  const parts = source
    .slice(1)
    .split("/")
    .map((p) => p.replaceAll("~1", "/").replaceAll("~0", "~"));
  let cur: unknown = all;
  for (const part of parts) {
    if (Array.isArray(cur)) {
      if (!/^[0-9]+$/.test(part)) return undefined;
      const i = Number(part);
      if (i >= cur.length) return undefined;
      cur = cur[i];
    } else if (typeof cur === "object" && cur !== null) {
      if (!Object.hasOwn(cur, part)) return undefined;
      cur = (cur as Record<string, unknown>)[part];
    } else {
      return undefined;
    }
  }
  return cur;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Nomad's stringifyClaimValue: strings as they are, booleans as
 * "true"/"false", numbers truncated to an integer (Go's int64(float64));
 * anything else (object, array, null) has no string form.
 */
export function stringifyClaim(raw: unknown): string | undefined {
  if (typeof raw === "string") return raw;
  if (typeof raw === "boolean") return raw ? "true" : "false";
  if (typeof raw === "number" && Number.isFinite(raw)) {
    const n = BigInt(Math.trunc(raw));
    // Go's out-of-range float→int64 conversion gives the minimum int64 on amd64.
    return (n < INT64_MIN || n > INT64_MAX ? INT64_MIN : n).toString();
  }
  return undefined;
}

function isScalar(v: unknown): boolean {
  return typeof v === "string" || typeof v === "boolean" || typeof v === "number";
}

/** The Go type a JSON value decodes to, as `%T` names it in Nomad's message. */
function goTypeName(v: unknown): string {
  if (Array.isArray(v)) return "[]interface {}";
  if (v === null) return "<nil>";
  return "map[string]interface {}";
}

/** Roughly Go's `%v` of a decoded JSON value, for messages only. */
function goValueText(v: unknown): string {
  if (v === null || v === undefined) return "<nil>";
  return JSON.stringify(v);
}
