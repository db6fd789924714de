import type { KeyObject } from "node:crypto";
import { type CryptoKey, compactVerify, decodeProtectedHeader, errors, type JWSAlgorithm } from "jose";
import { type KeySource, type KeySourceConfig, KeySourceError, openKeySource } from "./key-sources.ts";
import { MethodCache } from "./method-cache.ts";

/**
 * Validates a login JWT against a JWT auth method (Nomad's ACL.Login via
 * `lib/auth/jwt/validator.go` and hashicorp/cap's jwt.Validator).
 *
 * jose checks the signature (`compactVerify`); the claims are checked here
 * by hand rather than with `jwtVerify`, because cap's time rules are not
 * jose's: a token may lack `exp` (it then expires a leeway after `iat` or
 * `nbf`), `ExpirationLeeway` and `NotBeforeLeeway` apply only to such
 * missing claims, a zero leeway means a default (150 s, and 60 s of clock
 * skew) and a negative one means none. The issuer is checked against a list
 * (BoundIssuer), which jose cannot do either.
 */

/** The part of an auth method's config that validation reads (streams/acl.ts ACLAuthMethodConfigSpec). */
export interface JwtValidationConfig extends KeySourceConfig {
  readonly BoundAudiences: readonly string[];
  readonly BoundIssuer: readonly string[];
  readonly SigningAlgs: readonly string[];
  /** Nanoseconds. */
  readonly ExpirationLeeway: number;
  readonly NotBeforeLeeway: number;
  readonly ClockSkewLeeway: number;
}

export interface JwtAuthMethod {
  readonly Name: string;
  /** Keys are cached per method and ModifyIndex: an update to the method starts afresh. */
  readonly ModifyIndex: number;
  readonly Config: JwtValidationConfig | null;
}

/** Nomad's 401: the token did not validate. The message starts "unable to validate provided token: ". */
export class TokenValidationError extends Error {
  readonly status = 401;
  constructor(readonly reason: string) {
    super(`unable to validate provided token: ${reason}`);
    this.name = "TokenValidationError";
  }
}

export interface JwtValidatorOptions {
  /** Deadline of each request to the provider (ms); Nomad's is 60 s. */
  readonly timeoutMs?: number;
  /** Unix ms. The real time: the tokens come from outside, stamped with real time. */
  readonly now?: () => number;
  /** Cached key sources are dropped after this long (ms), as Nomad resets its provider cache every 6 h. */
  readonly cacheTtlMs?: number;
}

/** cap's supported algorithms; RS256 when the method names none. */
export const SUPPORTED_ALGS: readonly string[] = [
  "RS256",
  "RS384",
  "RS512",
  "ES256",
  "ES384",
  "ES512",
  "PS256",
  "PS384",
  "PS512",
  "EdDSA",
];

const DEFAULT_TIMEOUT_MS = 60_000;
/** cap's DefaultLeewaySeconds, for a token without exp (or nbf and iat). */
const DEFAULT_LEEWAY_S = 150;
/** go-jose's jwt.DefaultLeeway. */
const DEFAULT_CLOCK_SKEW_MS = 60_000;

export class JwtValidator {
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly sources: MethodCache<KeySource>;

  constructor(options: JwtValidatorOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.now = options.now ?? Date.now;
    this.sources = new MethodCache(this.now, options.cacheTtlMs);
  }

  /** The token's claims, or TokenValidationError. */
  async validate(method: JwtAuthMethod, token: string): Promise<Record<string, unknown>> {
    const config = method.Config;
    if (!config) throw new TokenValidationError("the auth method has no configuration");
    const algs = signingAlgs(config.SigningAlgs);
    if (typeof algs === "string") throw signatureError(`invalid algorithm (alg) header parameter: ${algs}`);
    let alg: unknown;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch (err) {
      throw signatureError(`error verifying token signature: ${(err as Error).message}`);
    }
    if (typeof alg !== "string" || !algs.includes(alg as JWSAlgorithm)) {
      throw signatureError(
        "invalid algorithm (alg) header parameter: token signed with unexpected algorithm",
      );
    }

    let source: KeySource;
    try {
      source = await this.sources.get(method.Name, method.ModifyIndex, () =>
        openKeySource(config, { timeoutMs: this.timeoutMs }),
      );
    } catch (err) {
      if (err instanceof KeySourceError) throw new TokenValidationError(err.message);
      throw err;
    }
    const payload = await verifyJws(token, source, algs);
    if (payload === undefined) {
      throw signatureError(
        source.kind === "static"
          ? "error verifying token signature: no known key successfully validated the token signature"
          : "error verifying token signature: failed to verify id token signature",
      );
    }
    const claims = parseClaims(payload);
    checkTimesAndAudience(claims, config, this.now());
    checkIssuer(claims, config.BoundIssuer);
    return claims;
  }

  /** Drops what is cached for a method (it was deleted or changed). */
  forget(name: string): void {
    this.sources.forget(name);
  }
}

/** The algorithms a method accepts (RS256 when it names none), or why its list is wrong. */
function signingAlgs(configured: readonly string[]): JWSAlgorithm[] | string {
  const algs = configured.length > 0 ? configured : ["RS256"];
  const unsupported = algs.find((a) => !SUPPORTED_ALGS.includes(a));
  if (unsupported !== undefined) return `unsupported signing algorithm "${unsupported}"`;
  return algs as JWSAlgorithm[];
}

function signatureError(reason: string): TokenValidationError {
  return new TokenValidationError(`unable to verify signature of JWT token: ${reason}`);
}

/**
 * The payload of `token` if a key of `source` verifies its signature with
 * one of `algorithms`, undefined if none does. Throws TokenValidationError
 * when the keys cannot be fetched.
 */
export async function verifyJws(
  token: string,
  source: KeySource,
  algorithms: JWSAlgorithm[],
): Promise<Uint8Array | undefined> {
  const options = { algorithms };
  if (source.kind === "static") {
    // cap's static key set: the first key that verifies wins.
    for (const key of source.keys) {
      const payload = await tryKey(token, key, options);
      if (payload) return payload;
    }
    return undefined;
  }
  try {
    return (await compactVerify(token, source.jwks, options)).payload;
  } catch (err) {
    // Several keys of the set fit the header (no kid): any of them may have signed.
    if (err instanceof errors.JWKSMultipleMatchingKeys) {
      for await (const key of err) {
        const payload = await tryKey(token, key, options);
        if (payload) return payload;
      }
      return undefined;
    }
    if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWSSignatureVerificationFailed) {
      return undefined;
    }
    throw signatureError(
      `error verifying token signature: fetching keys from ${source.url} failed or gave no usable key: ${(err as Error).message}`,
    );
  }
}

async function tryKey(
  token: string,
  key: KeyObject | CryptoKey,
  options: { algorithms: JWSAlgorithm[] },
): Promise<Uint8Array | undefined> {
  try {
    return (await compactVerify(token, key, options)).payload;
  } catch {
    return undefined;
  }
}

function parseClaims(payload: Uint8Array): Record<string, unknown> {
  let claims: unknown;
  try {
    claims = JSON.parse(new TextDecoder().decode(payload));
  } catch (err) {
    throw signatureError(
      `error verifying token signature: the payload is not JSON: ${(err as Error).message}`,
    );
  }
  if (typeof claims !== "object" || claims === null || Array.isArray(claims)) {
    throw signatureError("error verifying token signature: the payload is not a JSON object");
  }
  return claims as Record<string, unknown>;
}

/** A NumericDate claim in whole seconds (go-jose truncates), 0 when absent. */
function numericDate(claims: Record<string, unknown>, name: string): number {
  const v = claims[name];
  if (v === undefined || v === null) return 0;
  if (typeof v !== "number" || !Number.isFinite(v)) {
    throw signatureError(`the ${name} claim is not a number`);
  }
  return Math.trunc(v);
}

/** cap's leeway rule: zero means the default, negative means none. Seconds, truncated as cap does. */
function leewaySeconds(ns: number, defaultSeconds: number): number {
  if (ns < 0) return 0;
  if (ns === 0) return defaultSeconds;
  return Math.trunc(ns / 1e9);
}

function audienceClaim(claims: Record<string, unknown>): string[] {
  const aud = claims.aud;
  if (aud === undefined || aud === null) return [];
  if (typeof aud === "string") return [aud];
  if (Array.isArray(aud) && aud.every((a) => typeof a === "string")) return aud as string[];
  throw signatureError("the aud claim is neither a string nor a list of strings");
}

/** cap's jwt.Validator.Validate after the signature: times, then audience. */
function checkTimesAndAudience(
  claims: Record<string, unknown>,
  config: JwtValidationConfig,
  nowMs: number,
): void {
  const iat = numericDate(claims, "iat");
  let nbf = numericDate(claims, "nbf");
  let exp = numericDate(claims, "exp");
  if (iat === 0 && exp === 0 && nbf === 0) {
    throw signatureError("no issued at (iat), not before (nbf), or expiration time (exp) claims in token");
  }
  if (exp === 0) exp = Math.max(iat, nbf) + leewaySeconds(config.ExpirationLeeway, DEFAULT_LEEWAY_S);
  if (nbf === 0) nbf = iat !== 0 ? iat : exp - leewaySeconds(config.NotBeforeLeeway, DEFAULT_LEEWAY_S);
  const skewNs = config.ClockSkewLeeway;
  const skewMs = skewNs < 0 ? 0 : skewNs === 0 ? DEFAULT_CLOCK_SKEW_MS : skewNs / 1e6;

  if (config.BoundAudiences.length > 0) {
    const aud = audienceClaim(claims);
    if (!config.BoundAudiences.some((a) => aud.includes(a))) {
      throw signatureError(
        "invalid audience (aud) claim: audience claim does not match any expected audience",
      );
    }
  }
  if (nowMs + skewMs < nbf * 1000)
    throw signatureError("invalid not before (nbf) claim: token not yet valid");
  if (nowMs - skewMs > exp * 1000)
    throw signatureError("invalid expiration time (exp) claim: token is expired");
  if (iat !== 0 && nowMs + skewMs < iat * 1000) {
    throw signatureError("invalid issued at (iat) claim: token issued in the future");
  }
}

/** Nomad checks the issuer itself, since BoundIssuer is a list. */
function checkIssuer(claims: Record<string, unknown>, bound: readonly string[]): void {
  if (bound.length === 0) return;
  if (!Object.hasOwn(claims, "iss")) {
    throw new TokenValidationError(
      "auth method specifies BoundIssuers but the provided token does not contain issuer information",
    );
  }
  const iss = claims.iss;
  if (typeof iss !== "string")
    throw new TokenValidationError("unable to read iss property of provided token");
  if (!bound.includes(iss)) throw new TokenValidationError(`invalid JWT issuer: ${iss}`);
}
