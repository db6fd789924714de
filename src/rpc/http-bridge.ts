import type { FastifyInstance } from "fastify";

/** The user agent recorded for calls that came over the RPC port (audit: Actor.UserAgent). */
export const RPC_USER_AGENT = "Nomad RPC";

export interface BridgedRequest {
  readonly method: "GET" | "PUT";
  readonly url: string;
  readonly body?: unknown;
  /** Sent as X-Nomad-Token: the AuthToken of the RPC's QueryOptions / WriteRequest. */
  readonly token?: string;
  readonly remoteAddress: string;
}

export interface BridgedReply {
  readonly body: unknown;
  /** X-Nomad-Index of the answer; 0 when absent. */
  readonly index: number;
}

/** An HTTP route's refusal, carried as the RPC's error text (Nomad's RPC errors are plain text). */
export class BridgedError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/**
 * Runs one RPC as an in-process request to the API route that implements
 * it, so the RPC port and HTTP share validation, authentication, leader
 * forwarding, blocking and audit. An error status becomes a BridgedError
 * with the route's own message.
 */
export async function bridge(app: FastifyInstance, req: BridgedRequest): Promise<BridgedReply> {
  const headers: Record<string, string> = { "user-agent": RPC_USER_AGENT };
  if (req.token) headers["x-nomad-token"] = req.token;
  if (req.body !== undefined) headers["content-type"] = "application/json";
  const response = await app.inject({
    method: req.method,
    url: req.url,
    headers,
    payload: req.body === undefined ? undefined : JSON.stringify(req.body),
    remoteAddress: req.remoteAddress,
  });
  if (response.statusCode >= 400) {
    throw new BridgedError(response.body || `HTTP ${response.statusCode}`, response.statusCode);
  }
  const index = Number(response.headers["x-nomad-index"] ?? 0);
  return { body: response.body === "" ? null : response.json(), index: Number.isFinite(index) ? index : 0 };
}
