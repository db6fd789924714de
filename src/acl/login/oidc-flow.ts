import { createHash, randomBytes } from "node:crypto";
import { MethodCache } from "./method-cache.ts";
import {
  discoverProvider,
  exchangeCode,
  fetchUserinfo,
  OidcLoginError,
  type OidcProvider,
  type OidcProviderConfig,
  verifyIdToken,
} from "./oidc-provider.ts";
import { PendingOidcLogins } from "./pending-oidc-logins.ts";
import { redirectRefusal } from "./redirect-uri.ts";

/**
 * Nomad's OIDC login (ACL.OIDCAuthURL, ACL.OIDCCompleteAuth) as an
 * authorization code flow with PKCE (S256): auth-url hands out the
 * provider's sign-in URL with a fresh `state`, the caller's `ClientNonce` as
 * the `nonce`, and the PKCE challenge; complete-auth trades the code the
 * provider sent back for the ID token, checks it, and answers its claims
 * (with userinfo's merged over them later, claims.ts).
 *
 * The verifier waits for complete-auth in this server's memory
 * (pending-oidc-logins.ts says why, and what that means with several servers).
 */

export interface OidcAuthMethod {
  readonly Name: string;
  readonly ModifyIndex: number;
  readonly Config: OidcProviderConfig | null;
}

export interface OidcFlowOptions {
  /** Deadline of each request to the provider (ms); Nomad gives the exchange 60 s. */
  readonly timeoutMs?: number;
  /** Unix ms, real time (ID tokens are stamped by the provider's clock). */
  readonly now?: () => number;
  /** How long a started login may wait for complete-auth (ms). */
  readonly pendingTtlMs?: number;
  readonly maxPending?: number;
}

export interface AuthUrlRequest {
  readonly redirectUri: string;
  readonly clientNonce: string;
}

export interface CompleteAuthRequest {
  readonly state: string;
  readonly code: string;
  readonly redirectUri: string;
  readonly clientNonce: string;
}

export interface OidcClaims {
  readonly idClaims: Record<string, unknown>;
  /** Undefined when the provider has no userinfo endpoint. */
  readonly userClaims: Record<string, unknown> | undefined;
}

const DEFAULT_TIMEOUT_MS = 60_000;

export class OidcFlow {
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly providers: MethodCache<OidcProvider>;
  private readonly pending: PendingOidcLogins;

  constructor(options: OidcFlowOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.now = options.now ?? Date.now;
    this.providers = new MethodCache(this.now);
    this.pending = new PendingOidcLogins(this.now, options.pendingTtlMs, options.maxPending);
  }

  /** The provider's authorization URL for a new login. */
  async authUrl(method: OidcAuthMethod, req: AuthUrlRequest): Promise<string> {
    const config = requireConfig(method);
    const refusal = redirectRefusal(req.redirectUri, config.AllowedRedirectURIs);
    if (refusal !== undefined) throw new OidcLoginError(400, `failed to generate auth URL: ${refusal}`);
    const state = randomToken();
    // cap refuses a request whose state equals its nonce; a random state never does in practice.
    if (state === req.clientNonce)
      throw new OidcLoginError(400, "failed to generate OIDC request: state equals nonce");
    const provider = await this.provider(method, config);
    const codeVerifier = randomToken();
    const url = new URL(provider.authorizationEndpoint);
    const scopes = config.OIDCScopes.includes("openid")
      ? config.OIDCScopes
      : ["openid", ...config.OIDCScopes];
    url.searchParams.set("client_id", config.OIDCClientID);
    url.searchParams.set("redirect_uri", req.redirectUri);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("scope", scopes.join(" "));
    url.searchParams.set("state", state);
    url.searchParams.set("nonce", req.clientNonce);
    url.searchParams.set("code_challenge", createHash("sha256").update(codeVerifier).digest("base64url"));
    url.searchParams.set("code_challenge_method", "S256");
    this.pending.add(state, {
      authMethod: method.Name,
      methodModifyIndex: method.ModifyIndex,
      redirectUri: req.redirectUri,
      clientNonce: req.clientNonce,
      codeVerifier,
    });
    return url.href;
  }

  /** Trades the provider's code for checked claims. `clientSecret` is the method's, opened from its sealed form. */
  async completeAuth(
    method: OidcAuthMethod,
    clientSecret: string,
    req: CompleteAuthRequest,
  ): Promise<OidcClaims> {
    const config = requireConfig(method);
    const login = this.pending.take(req.state);
    if (!login || login.authMethod !== method.Name) {
      throw new OidcLoginError(
        400,
        "failed to exchange token with provider: unknown or expired state: start the login again with /v1/acl/oidc/auth-url, on this same server",
      );
    }
    if (login.clientNonce !== req.clientNonce) {
      throw new OidcLoginError(
        400,
        "failed to exchange token with provider: the client nonce is not the login's",
      );
    }
    if (login.redirectUri !== req.redirectUri) {
      throw new OidcLoginError(
        400,
        "failed to exchange token with provider: the redirect URI is not the login's",
      );
    }
    if (login.methodModifyIndex !== method.ModifyIndex) {
      throw new OidcLoginError(
        400,
        "failed to exchange token with provider: the auth method changed during the login",
      );
    }
    const refusal = redirectRefusal(req.redirectUri, config.AllowedRedirectURIs);
    if (refusal !== undefined)
      throw new OidcLoginError(400, `failed to exchange token with provider: ${refusal}`);
    const provider = await this.provider(method, config);
    const tokens = await exchangeCode(provider, {
      clientId: config.OIDCClientID,
      clientSecret,
      code: req.code,
      redirectUri: req.redirectUri,
      codeVerifier: login.codeVerifier,
    });
    const idClaims = await verifyIdToken(provider, tokens.idToken, {
      clientId: config.OIDCClientID,
      nonce: req.clientNonce,
      boundAudiences: config.BoundAudiences,
      signingAlgs: config.SigningAlgs,
      accessToken: tokens.accessToken,
      now: this.now(),
    });
    const userClaims = await fetchUserinfo(
      provider,
      tokens.accessToken,
      idClaims.sub as string,
      config.SigningAlgs,
    );
    return { idClaims, userClaims };
  }

  /** Drops the cached provider of a method. */
  forget(name: string): void {
    this.providers.forget(name);
  }

  private provider(method: OidcAuthMethod, config: OidcProviderConfig): Promise<OidcProvider> {
    return this.providers.get(method.Name, method.ModifyIndex, () =>
      discoverProvider(config, this.timeoutMs),
    );
  }
}

function requireConfig(method: OidcAuthMethod): OidcProviderConfig {
  if (!method.Config)
    throw new OidcLoginError(400, `auth-method ${JSON.stringify(method.Name)} has no configuration`);
  return method.Config;
}

/** 32 random bytes, base64url: a state or a PKCE verifier (43 characters, RFC 7636 §4.1). */
function randomToken(): string {
  return randomBytes(32).toString("base64url");
}
