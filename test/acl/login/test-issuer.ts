import { createHash, randomBytes } from "node:crypto";
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import {
  type CryptoKey,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  type JWK,
  type JWTPayload,
  SignJWT,
} from "jose";
import { TEST_SERVER_CERT_PEM, TEST_SERVER_KEY_PEM } from "./tls-fixture.ts";

/**
 * A real OIDC provider and JWKS server on 127.0.0.1 (ephemeral port) for the
 * login tests: it signs tokens with its own keys, publishes them, and runs
 * the authorization code flow with PKCE the way a provider does, checking
 * what a provider checks (client secret, PKCE verifier, single-use codes).
 * `/authorize` skips the login page: it answers the redirect with a code at
 * once, as if the user had signed in.
 */

export type KeyName = "rsa" | "ec" | "stranger";

export interface AuthorizeRecord {
  readonly clientId: string;
  readonly redirectUri: string;
  readonly scope: string;
  readonly state: string;
  readonly nonce: string;
  readonly codeChallenge: string;
  readonly codeChallengeMethod: string;
}

export interface TestIssuerOptions {
  readonly clientId?: string;
  readonly clientSecret?: string;
  /** Serve HTTPS with the certificate of tls-fixture.ts (trust TEST_CA_PEM). */
  readonly tls?: boolean;
  /** Omit the userinfo endpoint from discovery. */
  readonly noUserinfo?: boolean;
}

export interface TestIssuer {
  /** The issuer, which is also the discovery base URL. */
  readonly url: string;
  readonly jwksUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** SPKI PEM of a key, for static-key auth methods. */
  publicKeyPem(key: KeyName): Promise<string>;
  /** A JWT signed with a key (RS256 for rsa and stranger, ES256 for ec); `stranger` is not published. */
  sign(claims: JWTPayload, options?: { key?: KeyName; alg?: string; kid?: string | null }): Promise<string>;
  /** Claims the next ID tokens carry (sub included), and what userinfo answers. */
  user: { idToken: Record<string, unknown>; userinfo: Record<string, unknown> };
  /** What /authorize was asked, in order. */
  readonly authorizations: AuthorizeRecord[];
  /** Paths requested, in order ("GET /jwks", ...). */
  readonly requests: string[];
  close(): Promise<void>;
}

interface PendingCode {
  readonly record: AuthorizeRecord;
  readonly claims: Record<string, unknown>;
}

const ALGS: Record<KeyName, string> = { rsa: "RS256", ec: "ES256", stranger: "RS256" };

export async function startTestIssuer(options: TestIssuerOptions = {}): Promise<TestIssuer> {
  const clientId = options.clientId ?? "chronomad-client";
  const clientSecret = options.clientSecret ?? "s3cret-of-the-client";
  const keys: Record<KeyName, { publicKey: CryptoKey; privateKey: CryptoKey }> = {
    rsa: await generateKeyPair("RS256", { extractable: true }),
    ec: await generateKeyPair("ES256", { extractable: true }),
    stranger: await generateKeyPair("RS256", { extractable: true }),
  };
  const jwks: JWK[] = [];
  for (const name of ["rsa", "ec"] as const) {
    jwks.push({ ...(await exportJWK(keys[name].publicKey)), kid: name, alg: ALGS[name], use: "sig" });
  }
  const codes = new Map<string, PendingCode>();
  const accessTokens = new Map<string, Record<string, unknown>>();
  const authorizations: AuthorizeRecord[] = [];
  const requests: string[] = [];
  let url = "";

  const sign = async (claims: JWTPayload, o: { key?: KeyName; alg?: string; kid?: string | null } = {}) => {
    const key = o.key ?? "rsa";
    const kid = o.kid === undefined ? (key === "stranger" ? "rsa" : key) : o.kid;
    const header = { alg: o.alg ?? ALGS[key], typ: "JWT", ...(kid === null ? {} : { kid }) };
    return new SignJWT(claims).setProtectedHeader(header).sign(keys[key].privateKey);
  };

  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    const target = new URL(req.url ?? "/", url);
    requests.push(`${req.method} ${target.pathname}`);
    const body = await readBody(req);
    switch (`${req.method} ${target.pathname}`) {
      case "GET /.well-known/openid-configuration":
        return json(res, 200, {
          issuer: url,
          authorization_endpoint: `${url}/authorize`,
          token_endpoint: `${url}/token`,
          jwks_uri: `${url}/jwks`,
          ...(options.noUserinfo ? {} : { userinfo_endpoint: `${url}/userinfo` }),
          response_types_supported: ["code"],
          subject_types_supported: ["public"],
          id_token_signing_alg_values_supported: ["RS256", "ES256"],
          code_challenge_methods_supported: ["S256"],
          token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
        });
      case "GET /jwks":
        return json(res, 200, { keys: jwks });
      case "GET /authorize":
        return authorize(target.searchParams, res);
      case "POST /token":
        return token(req, new URLSearchParams(body), res);
      case "GET /userinfo": {
        const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
        const claims = bearer === undefined ? undefined : accessTokens.get(bearer);
        if (!claims) return json(res, 401, { error: "invalid_token" });
        return json(res, 200, claims);
      }
      default:
        return json(res, 404, { error: "not_found" });
    }
  };

  const issuer: TestIssuer = {
    url: "",
    jwksUrl: "",
    clientId,
    clientSecret,
    publicKeyPem: (key) => exportSPKI(keys[key].publicKey),
    sign,
    user: { idToken: { sub: "alice" }, userinfo: {} },
    authorizations,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };

  function authorize(q: URLSearchParams, res: ServerResponse) {
    const record: AuthorizeRecord = {
      clientId: q.get("client_id") ?? "",
      redirectUri: q.get("redirect_uri") ?? "",
      scope: q.get("scope") ?? "",
      state: q.get("state") ?? "",
      nonce: q.get("nonce") ?? "",
      codeChallenge: q.get("code_challenge") ?? "",
      codeChallengeMethod: q.get("code_challenge_method") ?? "",
    };
    authorizations.push(record);
    if (record.clientId !== clientId) return json(res, 400, { error: "unauthorized_client" });
    if (q.get("response_type") !== "code") return json(res, 400, { error: "unsupported_response_type" });
    if (record.redirectUri === "" || record.codeChallengeMethod !== "S256" || record.codeChallenge === "") {
      return json(res, 400, { error: "invalid_request" });
    }
    const code = randomBytes(16).toString("base64url");
    codes.set(code, { record, claims: { ...issuer.user.idToken } });
    const location = new URL(record.redirectUri);
    location.searchParams.set("code", code);
    location.searchParams.set("state", record.state);
    res.writeHead(302, { location: location.href }).end();
  }

  async function token(req: IncomingMessage, form: URLSearchParams, res: ServerResponse) {
    let id = form.get("client_id");
    let secret = form.get("client_secret");
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (basic !== undefined) {
      const [user = "", pass = ""] = Buffer.from(basic, "base64").toString().split(":");
      id = decodeURIComponent(user);
      secret = decodeURIComponent(pass);
    }
    if (id !== clientId || secret !== clientSecret) return json(res, 401, { error: "invalid_client" });
    if (form.get("grant_type") !== "authorization_code")
      return json(res, 400, { error: "unsupported_grant_type" });
    const code = form.get("code") ?? "";
    const pending = codes.get(code);
    codes.delete(code);
    if (!pending) return json(res, 400, { error: "invalid_grant", error_description: "unknown code" });
    if (form.get("redirect_uri") !== pending.record.redirectUri) {
      return json(res, 400, { error: "invalid_grant", error_description: "redirect_uri mismatch" });
    }
    const verifier = form.get("code_verifier") ?? "";
    if (createHash("sha256").update(verifier).digest("base64url") !== pending.record.codeChallenge) {
      return json(res, 400, { error: "invalid_grant", error_description: "PKCE verification failed" });
    }
    const now = Math.floor(Date.now() / 1000);
    const idToken = await sign({
      iss: url,
      aud: clientId,
      iat: now,
      exp: now + 300,
      nonce: pending.record.nonce,
      ...pending.claims,
    });
    const accessToken = randomBytes(16).toString("base64url");
    accessTokens.set(accessToken, { sub: pending.claims.sub, ...issuer.user.userinfo });
    return json(res, 200, {
      access_token: accessToken,
      token_type: "Bearer",
      expires_in: 300,
      id_token: idToken,
    });
  }

  const server: Server = options.tls
    ? createHttpsServer(
        { cert: TEST_SERVER_CERT_PEM, key: TEST_SERVER_KEY_PEM },
        (req, res) => void handler(req, res),
      )
    : createHttpServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  url = `${options.tls ? "https" : "http"}://127.0.0.1:${port}`;
  Object.assign(issuer, { url, jwksUrl: `${url}/jwks` });
  return issuer;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}
