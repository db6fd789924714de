import type { TestServer } from "../../server-harness.ts";

/** Nomad's VariableDecrypted as JSON. */
export interface VariableJson {
  Namespace: string;
  Path: string;
  CreateIndex: number;
  CreateTime: number;
  ModifyIndex: number;
  ModifyTime: number;
  Items: Record<string, string> | null;
}

/** Calls on `/v1/var/<path>` and `/v1/vars`, with an optional token. */
export function variablesClient(s: TestServer, token?: string) {
  const headers = (): Record<string, string> => (token === undefined ? {} : { "X-Nomad-Token": token });
  return {
    put: (path: string, body: unknown, query = "", method = "PUT") =>
      s.call(`/v1/var/${path}${query}`, { method, headers: headers(), body: JSON.stringify(body) }),
    /** PUT with `{Items: items}`. */
    set: (path: string, items: Record<string, string>, query = "") =>
      s.call(`/v1/var/${path}${query}`, {
        method: "PUT",
        headers: headers(),
        body: JSON.stringify({ Items: items }),
      }),
    get: (path: string, query = "") => s.call(`/v1/var/${path}${query}`, { headers: headers() }),
    del: (path: string, query = "") =>
      s.call(`/v1/var/${path}${query}`, { method: "DELETE", headers: headers() }),
    list: (query = "") => s.call(`/v1/vars${query}`, { headers: headers() }),
  };
}

/** The X-Nomad-Index of a response, as a number. */
export const indexOf = (res: Response) => Number(res.headers.get("x-nomad-index"));
