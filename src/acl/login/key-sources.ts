import { createPublicKey, type KeyObject } from "node:crypto";
import { createRemoteJWKSet, customFetch, type RemoteJWKSet } from "jose";
import { type RemoteFetch, remoteFetch } from "./remote-fetch.ts";

/**
 * Where a JWT auth method's verification keys come from (Nomad's
 * `lib/auth/jwt/validator.go`, through hashicorp/cap): the first of
 * static PEM keys, a JWKS URL, or an OIDC discovery URL whose document names
 * the JWKS.
 */
export type KeySource =
  | { readonly kind: "static"; readonly keys: readonly KeyObject[] }
  | { readonly kind: "remote"; readonly url: string; readonly jwks: RemoteJWKSet };

/** The part of an auth method's config that says where its keys are. */
export interface KeySourceConfig {
  readonly JWTValidationPubKeys: readonly string[];
  readonly JWKSURL: string;
  readonly JWKSCACert: string;
  readonly OIDCDiscoveryURL: string;
  readonly DiscoveryCaPem: readonly string[];
}

/** A key source that cannot be set up; the message is Nomad's where it has one. */
export class KeySourceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KeySourceError";
  }
}

export interface KeySourceOptions {
  /** Deadline of each provider request (ms). */
  readonly timeoutMs: number;
}

/** Builds the key source of `config`, fetching the discovery document when that is the source. */
export async function openKeySource(config: KeySourceConfig, options: KeySourceOptions): Promise<KeySource> {
  if (config.JWTValidationPubKeys.length > 0) {
    return { kind: "static", keys: config.JWTValidationPubKeys.map(parsePublicKeyPem) };
  }
  if (config.JWKSURL !== "") {
    const fetch = caFetch(config.JWKSCACert, options, "unable to get validation keys from JWKS");
    return { kind: "remote", url: config.JWKSURL, jwks: remoteKeySet(config.JWKSURL, fetch, options) };
  }
  if (config.OIDCDiscoveryURL !== "") {
    const what = "unable to get validation keys from OIDC provider";
    // Nomad reads only the first CA of the list here (its own TODO wonders why).
    const fetch = caFetch(config.DiscoveryCaPem[0] ?? "", options, what);
    const jwksUri = await discoverJwksUri(config.OIDCDiscoveryURL, fetch, what);
    return { kind: "remote", url: jwksUri, jwks: remoteKeySet(jwksUri, fetch, options) };
  }
  throw new KeySourceError(
    "the auth method has no validation keys: set JWTValidationPubKeys, JWKSURL or OIDCDiscoveryURL",
  );
}

/**
 * A public key in PEM: PKIX (SPKI) or an X.509 certificate, as cap reads
 * them. cap takes RSA and ECDSA keys only; Ed25519 keys are taken here as
 * well, since EdDSA is one of the signing algorithms an auth method may name.
 */
export function parsePublicKeyPem(pem: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (err) {
    throw new KeySourceError(`unable to parse public key for JWT auth: ${(err as Error).message}`);
  }
  if (
    key.asymmetricKeyType !== "rsa" &&
    key.asymmetricKeyType !== "ec" &&
    key.asymmetricKeyType !== "ed25519"
  ) {
    throw new KeySourceError(
      `unable to parse public key for JWT auth: data does not contain any valid RSA, ECDSA or Ed25519 public keys (found ${key.asymmetricKeyType ?? "none"})`,
    );
  }
  return key;
}

/** A fetch trusting `caPem` (the system's CAs when empty); a bad PEM is a KeySourceError. */
export function caFetch(caPem: string, options: KeySourceOptions, what: string): RemoteFetch {
  try {
    return remoteFetch({ caPem, timeoutMs: options.timeoutMs });
  } catch (err) {
    throw new KeySourceError(`${what}: ${(err as Error).message}`);
  }
}

/** A JWKS fetched through `fetch` when keys are needed (jose refetches on an unknown kid). */
export function remoteKeySet(url: string, fetch: RemoteFetch, options: KeySourceOptions): RemoteJWKSet {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new KeySourceError(`unable to get validation keys from JWKS: invalid URL ${JSON.stringify(url)}`);
  }
  return createRemoteJWKSet(parsed, { timeoutDuration: options.timeoutMs, [customFetch]: fetch });
}

/**
 * An OIDC discovery document (`<issuer>/.well-known/openid-configuration`),
 * which must name exactly this issuer (cap's NewOIDCDiscoveryKeySet, and
 * go-oidc's NewProvider for the OIDC flow). `what` starts every error message.
 */
export async function fetchDiscoveryDocument(
  issuer: string,
  fetch: RemoteFetch,
  what: string,
): Promise<Record<string, unknown>> {
  const wellKnown = `${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
  let response: Response;
  let text: string;
  try {
    response = await fetch(wellKnown, { method: "GET", headers: { accept: "application/json" } });
    text = await response.text();
  } catch (err) {
    throw new KeySourceError(`${what}: ${(err as Error).message}`);
  }
  if (response.status !== 200) {
    throw new KeySourceError(`${what}: ${response.status} ${response.statusText}: ${text.slice(0, 512)}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new KeySourceError(`${what}: failed to decode OIDC discovery document: ${(err as Error).message}`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw new KeySourceError(`${what}: failed to decode OIDC discovery document: not a JSON object`);
  }
  const found = (doc as Record<string, unknown>).issuer;
  if (found !== issuer) {
    throw new KeySourceError(
      `${what}: issuer did not match the returned issuer, expected ${JSON.stringify(issuer)} got ${JSON.stringify(found ?? "")}`,
    );
  }
  return doc as Record<string, unknown>;
}

async function discoverJwksUri(issuer: string, fetch: RemoteFetch, what: string): Promise<string> {
  const jwksUri = (await fetchDiscoveryDocument(issuer, fetch, what)).jwks_uri;
  if (typeof jwksUri !== "string" || jwksUri === "") {
    throw new KeySourceError(`${what}: the OIDC discovery document has no jwks_uri`);
  }
  return jwksUri;
}
