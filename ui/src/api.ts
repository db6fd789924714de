import { getToken } from "./token.ts";

/** An answer of chronomad's HTTP API that is not a success, with the text to show. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface Answer<T> {
  readonly body: T;
  /** X-Nomad-Index: the index the answer is as of. */
  readonly index: number;
  /** X-Nomad-NextToken: where the next page starts, "" on the last one. */
  readonly nextToken: string;
}

export type Params = Readonly<Record<string, string | number | readonly string[] | undefined>>;

export function apiUrl(path: string, params: Params = {}): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined || value === "") continue;
    if (Array.isArray(value)) for (const v of value) query.append(name, v);
    else query.set(name, String(value));
  }
  const q = query.toString();
  return q === "" ? path : `${path}?${q}`;
}

export function authHeaders(): Record<string, string> {
  const token = getToken();
  return token === "" ? {} : { "X-Nomad-Token": token };
}

/** Reads JSON from the API with the session's token; a non-2xx answer throws ApiError. */
export async function getJson<T>(
  path: string,
  params: Params = {},
  signal?: AbortSignal,
): Promise<Answer<T>> {
  return request<T>("GET", path, params, undefined, signal);
}

export async function postJson<T>(path: string, body: unknown, signal?: AbortSignal): Promise<Answer<T>> {
  return request<T>("POST", path, {}, body, signal);
}

async function request<T>(
  method: string,
  path: string,
  params: Params,
  body: unknown,
  signal: AbortSignal | undefined,
): Promise<Answer<T>> {
  const headers: Record<string, string> = { Accept: "application/json", ...authHeaders() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(apiUrl(path, params), {
    method,
    headers,
    body: body === undefined ? null : JSON.stringify(body),
    signal: signal ?? null,
  });
  if (!response.ok) throw await errorOf(response);
  return {
    body: (await response.json()) as T,
    index: Number(response.headers.get("X-Nomad-Index") ?? 0),
    nextToken: response.headers.get("X-Nomad-NextToken") ?? "",
  };
}

/** The error a failed answer means to the reader: what to do about 401/403, the server's own words otherwise. */
export async function errorOf(response: Response): Promise<ApiError> {
  const text = (await response.text().catch(() => "")).trim();
  if (response.status === 401 || response.status === 403) {
    const why = getToken() === "" ? "ACLs are enabled and no token is set" : "the token set is not allowed";
    return new ApiError(
      response.status,
      `${response.status === 401 ? "Unauthorized" : "Permission denied"}: ${why}. ` +
        "Enter an ACL token with read access in the token field at the top of the page." +
        (text === "" ? "" : ` (server: ${text})`),
    );
  }
  return new ApiError(response.status, text === "" ? `HTTP ${response.status}` : text);
}

/** An error's message for the page; an aborted request is not an error to show. */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

export const isAbort = (err: unknown) => err instanceof DOMException && err.name === "AbortError";
