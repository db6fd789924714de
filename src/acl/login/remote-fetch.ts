import { X509Certificate } from "node:crypto";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

/**
 * The `fetch` that login uses to reach an identity provider (discovery
 * documents, JWKS, token and userinfo endpoints): node's http/https client,
 * so an auth method's own CA (`JWKSCACert`, `DiscoveryCaPem`) can be the
 * trust root of its connections. Node's global fetch takes a custom CA only
 * through an undici Agent, and undici is not a dependency of chronomad.
 *
 * jose and openid-client accept such a function through their `customFetch`
 * option, so every request they make goes through here.
 */

/** The subset of fetch the libraries call. */
export type RemoteFetch = (
  url: string,
  init?: {
    readonly method?: string;
    readonly headers?: ConstructorParameters<typeof Headers>[0];
    readonly body?: string | URLSearchParams | null;
    readonly signal?: AbortSignal | null;
    readonly redirect?: string;
  },
) => Promise<Response>;

export interface RemoteFetchOptions {
  /** PEM CA certificates to trust instead of the system's; undefined: the system's. */
  readonly caPem?: string | undefined;
  /** Each request (and reading its body) ends after this long: Nomad gives its provider calls 60 s. */
  readonly timeoutMs: number;
  /** Bigger answers are refused: discovery documents and key sets are small. */
  readonly maxBodyBytes?: number;
}

const DEFAULT_MAX_BODY = 1024 * 1024;
const NULL_BODY_STATUS = new Set([101, 204, 205, 304]);

/** An auth method's CA PEM that is not one: the login fails with this. */
export class CaPemError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CaPemError";
  }
}

/** Throws CaPemError unless `pem` holds at least one certificate node can read. */
export function checkCaPem(pem: string): void {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new CaPemError("could not parse CA PEM value successfully");
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw new CaPemError(`could not parse CA PEM value successfully: ${(err as Error).message}`);
    }
  }
}

/** A fetch through node's client; redirects are not followed (the callers ask for `manual`). */
export function remoteFetch(options: RemoteFetchOptions): RemoteFetch {
  const ca = options.caPem === undefined || options.caPem === "" ? undefined : options.caPem;
  if (ca !== undefined) checkCaPem(ca);
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  return (url, init = {}) =>
    new Promise<Response>((resolve, reject) => {
      let target: URL;
      try {
        target = new URL(url);
      } catch {
        reject(new TypeError(`invalid URL ${JSON.stringify(url)}`));
        return;
      }
      if (target.protocol !== "http:" && target.protocol !== "https:") {
        reject(new TypeError(`unsupported URL scheme ${target.protocol} in ${JSON.stringify(url)}`));
        return;
      }
      const headers = new Headers(init.headers);
      const body = init.body === undefined || init.body === null ? undefined : String(init.body);
      if (init.body instanceof URLSearchParams && !headers.has("content-type")) {
        headers.set("content-type", "application/x-www-form-urlencoded;charset=UTF-8");
      }
      if (body !== undefined) headers.set("content-length", String(Buffer.byteLength(body)));
      const timeout = AbortSignal.timeout(options.timeoutMs);
      const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
      const send = target.protocol === "https:" ? httpsRequest : httpRequest;
      const req = send(target, {
        method: init.method ?? "GET",
        headers: Object.fromEntries(headers),
        signal,
        ...(ca !== undefined && target.protocol === "https:" ? { ca } : {}),
      });
      req.on("error", (err) => reject(signal.aborted ? abortError(url, options.timeoutMs, timeout) : err));
      req.on("response", (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBody) {
            res.destroy();
            reject(new Error(`response from ${url} is larger than ${maxBody} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on("error", (err) => reject(signal.aborted ? abortError(url, options.timeoutMs, timeout) : err));
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          if (status < 200 || status > 599) {
            reject(new Error(`unexpected HTTP status ${status} from ${url}`));
            return;
          }
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (value === undefined) continue;
            for (const v of Array.isArray(value) ? value : [value]) responseHeaders.append(name, v);
          }
          resolve(
            new Response(NULL_BODY_STATUS.has(status) ? null : Buffer.concat(chunks), {
              status,
              statusText: res.statusMessage ?? "",
              headers: responseHeaders,
            }),
          );
        });
      });
      req.end(body);
    });
}

function abortError(url: string, timeoutMs: number, timeout: AbortSignal): Error {
  if (timeout.aborted) return new Error(`request to ${url} timed out after ${timeoutMs} ms`);
  return new Error(`request to ${url} was aborted`);
}
