import { startTestServer, type TestServer } from "../server-harness.ts";

export interface AclToken {
  readonly AccessorID: string;
  readonly SecretID: string;
  readonly Name: string;
  readonly Type: string;
  readonly Policies: string[];
  readonly Roles: { ID: string; Name: string }[];
  readonly ExpirationTime?: string;
  readonly ExpirationTTL: string;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

export interface AclServer {
  readonly s: TestServer;
  readonly root: AclToken;
  /** A request with `secret` as X-Nomad-Token (none for undefined); JSON bodies. */
  call(secret: string | undefined, path: string, method?: string, body?: unknown): Promise<Response>;
  /** As the bootstrap token; throws unless 2xx. */
  write(path: string, body: unknown, method?: string): Promise<Response>;
  policy(name: string, rules: string): Promise<void>;
  token(policies: string[], extra?: Record<string, unknown>): Promise<AclToken>;
}

/** A real server with ACLs on, bootstrapped; its management token as `root`. */
export async function startAclServer(args: string[] = []): Promise<AclServer> {
  const s = await startTestServer({ args: ["--acl-enabled", ...args] });
  const call = (secret: string | undefined, path: string, method = "GET", body?: unknown) =>
    s.call(path, {
      method,
      headers: secret === undefined ? {} : { "X-Nomad-Token": secret },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const boot = await call(undefined, "/v1/acl/bootstrap", "POST");
  if (boot.status !== 200) throw new Error(`bootstrap: ${boot.status} ${await boot.text()}`);
  const root = (await boot.json()) as AclToken;
  const write = async (path: string, body: unknown, method = "PUT") => {
    const res = await call(root.SecretID, path, method, body);
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res;
  };
  return {
    s,
    root,
    call,
    write,
    policy: async (name, rules) => {
      await write(`/v1/acl/policy/${name}`, { Name: name, Rules: rules });
    },
    token: async (policies, extra = {}) =>
      (await (
        await write("/v1/acl/token", { Name: "test", Type: "client", Policies: policies, ...extra })
      ).json()) as AclToken,
  };
}
