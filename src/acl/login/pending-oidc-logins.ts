/**
 * OIDC logins between `/v1/acl/oidc/auth-url` and `/v1/acl/oidc/complete-auth`,
 * by their `state`: the PKCE verifier must survive from one call to the
 * other, and the state must be one this server handed out.
 *
 * They are kept in this server's memory, never in the log: the verifier is a
 * secret, and a login that was never completed is not cluster state. So the
 * completing call must reach the server that answered auth-url; behind a
 * load balancer that spreads calls across servers, it fails with "unknown
 * or expired state" and the login must start again. (Nomad 1.6 keeps
 * nothing: it uses no PKCE and rebuilds the request from the state and
 * nonce the caller sends back, so any server can complete it.)
 *
 * A login is kept for `ttlMs`. Nomad puts no bound of its own on the time a
 * user spends at the provider's sign-in page (the provider's code lifetime
 * is the bound), so the default here is generous: 10 minutes, as Vault's
 * OIDC auth keeps its pending logins. The auth-url endpoint needs no token,
 * so the number kept is bounded too; past it the oldest are dropped.
 */

export interface PendingOidcLogin {
  readonly authMethod: string;
  /** The method's ModifyIndex when the login started: a method changed since then refuses it. */
  readonly methodModifyIndex: number;
  readonly redirectUri: string;
  readonly clientNonce: string;
  readonly codeVerifier: string;
  /** Unix ms. */
  readonly expiresAt: number;
}

export const DEFAULT_PENDING_TTL_MS = 10 * 60_000;
export const DEFAULT_MAX_PENDING = 10_000;

export class PendingOidcLogins {
  /** Insertion order is expiry order (one TTL for all), so the oldest come first. */
  private readonly byState = new Map<string, PendingOidcLogin>();

  constructor(
    private readonly now: () => number,
    readonly ttlMs: number = DEFAULT_PENDING_TTL_MS,
    private readonly max: number = DEFAULT_MAX_PENDING,
  ) {}

  add(state: string, login: Omit<PendingOidcLogin, "expiresAt">): void {
    this.sweep();
    while (this.byState.size >= this.max) {
      const oldest = this.byState.keys().next().value;
      if (oldest === undefined) break;
      this.byState.delete(oldest);
    }
    this.byState.set(state, { ...login, expiresAt: this.now() + this.ttlMs });
  }

  /** The login of `state`, removed: a state completes once. Undefined when unknown or expired. */
  take(state: string): PendingOidcLogin | undefined {
    const login = this.byState.get(state);
    this.byState.delete(state);
    if (!login || login.expiresAt <= this.now()) return undefined;
    return login;
  }

  get size(): number {
    return this.byState.size;
  }

  /** Expired logins leave from the front; a sweep stops at the first live one. */
  private sweep(): void {
    const now = this.now();
    for (const [state, login] of this.byState) {
      if (login.expiresAt > now) break;
      this.byState.delete(state);
    }
  }
}
