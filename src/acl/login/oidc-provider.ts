import { createHash } from "node:crypto";
import { decodeProtectedHeader, type JWSAlgorithm } from "jose";
import { verifyJws } from "./jwt-validator.ts";
import {
  caFetch,
  fetchDiscoveryDocument,
  type KeySource,
  KeySourceError,
  remoteKeySet,
} from "./key-sources.ts";
import type { RemoteFetch } from "./remote-fetch.ts";

/**
 * The OIDC provider side of a login (what Nomad gets from hashicorp/cap's
 * oidc.Provider, itself on go-oidc and x/oauth2): discovery, the code
 * exchange at the token endpoint, the ID token checks, userinfo.
 *
 * Written on jose and node's http client rather than openid-client: the
 * checks are cap's own (BoundAudiences as well as the client ID, the
 * method's SigningAlgs), the redirect URI reaches the token endpoint
 * exactly as the caller gave it (openid-client rebuilds it from a URL
 * without its query), and providers that announce the RFC 9207 `iss`
 * response parameter are not refused for a callback (Nomad's CLI and UI)
 * that does not pass it on.
 */

/** The part of an OIDC auth method's config the provider reads (streams/acl.ts ACLAuthMethodConfigSpec). */
export interface OidcProviderConfig {
  readonly OIDCDiscoveryURL: string;
  readonly OIDCClientID: string;
  readonly OIDCScopes: readonly string[];
  readonly BoundAudiences: readonly string[];
  readonly AllowedRedirectURIs: readonly string[];
  readonly DiscoveryCaPem: readonly string[];
  readonly SigningAlgs: readonly string[];
}

export interface OidcProvider {
  readonly issuer: string;
  readonly authorizationEndpoint: string;
  readonly tokenEndpoint: string;
  /** Absent when the provider announces none: login then goes on with the ID token's claims alone. */
  readonly userinfoEndpoint: string | undefined;
  /** `token_endpoint_auth_methods_supported`, when announced. */
  readonly tokenAuthMethods: readonly string[] | undefined;
  readonly keys: KeySource;
  readonly fetch: RemoteFetch;
}

/** A failure of the OIDC flow, with the HTTP status it answers. */
export class OidcLoginError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "OidcLoginError";
  }
}

/** go-oidc's NewProvider: the discovery document, its issuer checked, its endpoints read. */
export async function discoverProvider(config: OidcProviderConfig, timeoutMs: number): Promise<OidcProvider> {
  const what = "failed to generate OIDC provider";
  if (config.OIDCDiscoveryURL === "") throw new OidcLoginError(400, `${what}: discovery URL is empty`);
  if (config.OIDCClientID === "") throw new OidcLoginError(400, `${what}: client ID is empty`);
  try {
    // cap trusts every CA of the list here (the JWT path takes only the first).
    const fetch = caFetch(config.DiscoveryCaPem.join("\n"), { timeoutMs }, what);
    const doc = await fetchDiscoveryDocument(config.OIDCDiscoveryURL, fetch, what);
    const endpoint = (name: string, required: boolean): string | undefined => {
      const v = doc[name];
      if (typeof v === "string" && v !== "") return v;
      if (required) throw new KeySourceError(`${what}: the discovery document has no ${name}`);
      return undefined;
    };
    const jwksUri = endpoint("jwks_uri", true) as string;
    const methods = doc.token_endpoint_auth_methods_supported;
    return {
      issuer: config.OIDCDiscoveryURL,
      authorizationEndpoint: endpoint("authorization_endpoint", true) as string,
      tokenEndpoint: endpoint("token_endpoint", true) as string,
      userinfoEndpoint: endpoint("userinfo_endpoint", false),
      tokenAuthMethods: Array.isArray(methods) ? methods.filter((m) => typeof m === "string") : undefined,
      keys: { kind: "remote", url: jwksUri, jwks: remoteKeySet(jwksUri, fetch, { timeoutMs }) },
      fetch,
    };
  } catch (err) {
    if (err instanceof KeySourceError) throw new OidcLoginError(500, err.message);
    throw err;
  }
}

export interface CodeExchange {
  readonly clientId: string;
  /** Empty for a public client: it then authenticates by PKCE alone. */
  readonly clientSecret: string;
  readonly code: string;
  readonly redirectUri: string;
  readonly codeVerifier: string;
}

export interface ExchangedTokens {
  readonly idToken: string;
  readonly accessToken: string;
}

const EXCHANGE = "failed to exchange token with provider";

/**
 * The authorization code grant (RFC 6749 §4.1.3 with PKCE). The client
 * authenticates with HTTP Basic (the default of RFC 6749 and of x/oauth2's
 * first attempt) unless the provider announces only `client_secret_post`.
 */
export async function exchangeCode(provider: OidcProvider, x: CodeExchange): Promise<ExchangedTokens> {
  const form = new URLSearchParams({
    grant_type: "authorization_code",
    code: x.code,
    redirect_uri: x.redirectUri,
    code_verifier: x.codeVerifier,
  });
  const headers: Record<string, string> = { accept: "application/json" };
  const methods = provider.tokenAuthMethods;
  const post =
    methods !== undefined &&
    !methods.includes("client_secret_basic") &&
    methods.includes("client_secret_post");
  if (x.clientSecret === "" || post) {
    form.set("client_id", x.clientId);
    if (x.clientSecret !== "") form.set("client_secret", x.clientSecret);
  } else {
    headers.authorization = `Basic ${Buffer.from(`${formEncode(x.clientId)}:${formEncode(x.clientSecret)}`).toString("base64")}`;
  }
  let response: Response;
  let body: unknown;
  try {
    response = await provider.fetch(provider.tokenEndpoint, { method: "POST", headers, body: form });
    const text = await response.text();
    body = parseJsonOrUndefined(text);
  } catch (err) {
    throw new OidcLoginError(500, `${EXCHANGE}: ${(err as Error).message}`);
  }
  const fields = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  if (response.status !== 200) {
    const detail =
      typeof fields.error === "string"
        ? `${fields.error}${typeof fields.error_description === "string" ? `: ${fields.error_description}` : ""}`
        : `${response.status} ${response.statusText}`;
    throw new OidcLoginError(401, `${EXCHANGE}: the token endpoint refused the code: ${detail}`);
  }
  if (typeof fields.access_token !== "string" || fields.access_token === "") {
    throw new OidcLoginError(401, `${EXCHANGE}: server response missing access_token`);
  }
  if (typeof fields.id_token !== "string" || fields.id_token === "") {
    throw new OidcLoginError(401, `${EXCHANGE}: id_token is missing from auth code exchange`);
  }
  return { idToken: fields.id_token, accessToken: fields.access_token };
}

export interface IdTokenChecks {
  readonly clientId: string;
  readonly nonce: string;
  readonly boundAudiences: readonly string[];
  readonly signingAlgs: readonly string[];
  readonly accessToken: string;
  /** Unix ms. */
  readonly now: number;
}

/** go-oidc's leeway for nbf, and cap's for iat. */
const NBF_LEEWAY_MS = 5 * 60_000;
const IAT_LEEWAY_MS = 60_000;

/**
 * cap's Provider.VerifyIDToken (through go-oidc's verifier): signature by a
 * key of the provider with an allowed algorithm, issuer, expiry, nonce,
 * subject, audience (one of BoundAudiences when set, and the client ID
 * present or named as authorized party), and `at_hash` when present.
 */
export async function verifyIdToken(
  provider: OidcProvider,
  idToken: string,
  checks: IdTokenChecks,
): Promise<Record<string, unknown>> {
  const fail = (why: string) => new OidcLoginError(401, `${EXCHANGE}: id_token failed verification: ${why}`);
  const algs = (checks.signingAlgs.length > 0 ? checks.signingAlgs : ["RS256"]) as JWSAlgorithm[];
  let alg: string;
  try {
    const header = decodeProtectedHeader(idToken);
    if (typeof header.alg !== "string") throw new Error("no alg");
    alg = header.alg;
  } catch {
    throw fail("the id_token is not a JWS");
  }
  if (!algs.includes(alg as JWSAlgorithm)) throw fail(`signed with unsupported algorithm ${alg}`);
  let payload: Uint8Array | undefined;
  try {
    payload = await verifyJws(idToken, provider.keys, algs);
  } catch (err) {
    throw new OidcLoginError(500, `${EXCHANGE}: ${(err as Error).message}`);
  }
  if (payload === undefined) throw fail("failed to verify id token signature");
  const claims = parseJsonOrUndefined(new TextDecoder().decode(payload));
  if (typeof claims !== "object" || claims === null || Array.isArray(claims)) {
    throw fail("the payload is not a JSON object");
  }
  const c = claims as Record<string, unknown>;

  if (c.iss !== provider.issuer) {
    throw fail(`id token issued by a different provider, expected ${JSON.stringify(provider.issuer)}`);
  }
  const exp = typeof c.exp === "number" ? c.exp : 0;
  if (exp * 1000 < checks.now) throw fail("token is expired");
  if (typeof c.nbf === "number" && checks.now + NBF_LEEWAY_MS < c.nbf * 1000) {
    throw fail("current time before the nbf (not before) time");
  }
  if (c.nonce !== checks.nonce) throw fail("invalid id_token nonce");
  if (typeof c.iat === "number" && checks.now + IAT_LEEWAY_MS < c.iat * 1000) {
    throw fail("current time before the iat (issued at) time");
  }
  if (typeof c.sub !== "string" || c.sub === "") throw fail("invalid id_token: sub: missing claim");
  const aud =
    typeof c.aud === "string"
      ? [c.aud]
      : Array.isArray(c.aud)
        ? c.aud.filter((a) => typeof a === "string")
        : [];
  if (aud.length === 0) throw fail("invalid id_token: aud: missing claim");
  if (checks.boundAudiences.length > 0 && !checks.boundAudiences.some((a) => aud.includes(a))) {
    throw fail("invalid id_token audiences");
  }
  const azp = c.azp;
  if (azp !== undefined && azp !== checks.clientId) {
    throw fail(`authorized party (${String(azp)}) is not equal client_id (${checks.clientId})`);
  }
  if (aud.length > 1 && (!aud.includes(checks.clientId) || azp !== checks.clientId)) {
    throw fail("multiple audiences, and the client_id is not among them or not the authorized party");
  }
  if (aud.length === 1 && aud[0] !== checks.clientId && azp !== checks.clientId) {
    throw fail(`one audience (${aud[0]}) which is not the client_id (${checks.clientId})`);
  }
  if (typeof c.at_hash === "string" && c.at_hash !== tokenHash(alg, checks.accessToken)) {
    throw new OidcLoginError(401, `${EXCHANGE}: access_token failed verification: at_hash does not match`);
  }
  return c;
}

/**
 * The claims of the userinfo endpoint (cap's Provider.UserInfo): they must
 * be about the ID token's subject and, when they name an issuer, this one.
 * Undefined when the provider has no userinfo endpoint.
 */
export async function fetchUserinfo(
  provider: OidcProvider,
  accessToken: string,
  subject: string,
  signingAlgs: readonly string[],
): Promise<Record<string, unknown> | undefined> {
  if (provider.userinfoEndpoint === undefined) return undefined;
  const what = "failed to retrieve the user info claims";
  let response: Response;
  let text: string;
  try {
    response = await provider.fetch(provider.userinfoEndpoint, {
      method: "GET",
      headers: { authorization: `Bearer ${accessToken}`, accept: "application/json" },
    });
    text = await response.text();
  } catch (err) {
    throw new OidcLoginError(500, `${what}: ${(err as Error).message}`);
  }
  if (response.status !== 200) {
    throw new OidcLoginError(
      401,
      `${what}: ${response.status} ${response.statusText}: ${text.slice(0, 512)}`,
    );
  }
  let claims: unknown;
  if ((response.headers.get("content-type") ?? "").startsWith("application/jwt")) {
    // A signed userinfo answer: its claims count once a provider key verifies it.
    const algs = (signingAlgs.length > 0 ? signingAlgs : ["RS256"]) as JWSAlgorithm[];
    const payload = await verifyJws(text.trim(), provider.keys, algs).catch(() => undefined);
    if (payload === undefined) throw new OidcLoginError(401, `${what}: the signed userinfo does not verify`);
    claims = parseJsonOrUndefined(new TextDecoder().decode(payload));
  } else {
    claims = parseJsonOrUndefined(text);
  }
  if (typeof claims !== "object" || claims === null || Array.isArray(claims)) {
    throw new OidcLoginError(401, `${what}: the answer is not a JSON object`);
  }
  const c = claims as Record<string, unknown>;
  if (c.sub !== subject) throw new OidcLoginError(401, `${what}: invalid subject`);
  if (c.iss !== undefined && c.iss !== "" && c.iss !== provider.issuer) {
    throw new OidcLoginError(401, `${what}: invalid issuer`);
  }
  return c;
}

/** OIDC Core §3.1.3.6: the left half of the access token's hash, by the ID token's algorithm. */
function tokenHash(alg: string, token: string): string {
  const bits = alg === "EdDSA" ? "512" : alg.slice(-3);
  const hash = bits === "384" ? "sha384" : bits === "512" ? "sha512" : "sha256";
  const digest = createHash(hash).update(token).digest();
  return digest.subarray(0, digest.length / 2).toString("base64url");
}

/** application/x-www-form-urlencoded, as RFC 6749 §2.3.1 wants the Basic credentials encoded. */
function formEncode(s: string): string {
  return encodeURIComponent(s).replaceAll("%20", "+");
}

function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
