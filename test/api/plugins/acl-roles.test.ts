import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

interface Cluster {
  readonly s: TestServer;
  /** The bootstrap (management) token's secret. */
  readonly root: string;
}

interface Role {
  ID: string;
  Name: string;
  Description: string;
  Policies: { Name: string }[];
  Hash: string;
  CreateIndex: number;
  ModifyIndex: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function start(): Promise<Cluster> {
  const s = await startTestServer({ args: ["--acl-enabled"] });
  running.push(s);
  const boot = await s.call("/v1/acl/bootstrap", { method: "POST" });
  expect(boot.status, await boot.clone().text()).toBe(200);
  const { SecretID } = (await boot.json()) as { SecretID: string };
  const c = { s, root: SecretID };
  for (const name of ["p1", "p2", "p3"]) {
    const res = await send(s, "PUT", `/v1/acl/policy/${name}`, SecretID, {
      Name: name,
      Rules: 'namespace "default" { policy = "read" }',
    });
    expect(res.status, await res.clone().text()).toBe(200);
  }
  return c;
}

function send(s: TestServer, method: string, path: string, token?: string, body?: unknown) {
  return s.call(path, {
    method,
    headers: token ? { "X-Nomad-Token": token } : {},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function createRole(c: Cluster, body: Record<string, unknown>): Promise<Role> {
  const res = await send(c.s, "POST", "/v1/acl/role", c.root, body);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Role;
}

async function clientToken(c: Cluster, body: Record<string, unknown>): Promise<string> {
  const res = await send(c.s, "POST", "/v1/acl/token", c.root, { Name: "client", Type: "client", ...body });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { SecretID: string }).SecretID;
}

async function json<T>(res: Response): Promise<T> {
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as T;
}

describe("/v1/acl/role and /v1/acl/roles", () => {
  it("creates, reads, renames, lists and deletes a role as Nomad does", async () => {
    const c = await start();
    const empty = await send(c.s, "GET", "/v1/acl/roles", c.root);
    expect(await empty.json()).toEqual([]);
    expect(empty.headers.get("x-nomad-index")).toBe("1");

    const res = await send(c.s, "PUT", "/v1/acl/role", c.root, {
      Name: "ops",
      Description: "operators",
      // Links are kept once each, in the order first given.
      Policies: [{ Name: "p2" }, { Name: "p1" }, { Name: "p2" }],
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const index = Number(res.headers.get("x-nomad-index"));
    expect(index).toBe(c.s.log.lastIndex());
    const role = (await res.json()) as Role;
    expect(Object.keys(role)).toEqual([
      "ID",
      "Name",
      "Description",
      "Policies",
      "Hash",
      "CreateIndex",
      "ModifyIndex",
    ]);
    expect(role.ID).toMatch(UUID);
    expect(role).toMatchObject({
      Name: "ops",
      Description: "operators",
      Policies: [{ Name: "p2" }, { Name: "p1" }],
      CreateIndex: index,
      ModifyIndex: index,
    });
    expect(Buffer.from(role.Hash, "base64")).toHaveLength(32);

    const byId = await send(c.s, "GET", `/v1/acl/role/${role.ID}`, c.root);
    expect(byId.headers.get("x-nomad-index")).toBe(String(index));
    expect(await json(byId)).toEqual(role);
    expect(await json(await send(c.s, "GET", "/v1/acl/role/name/ops", c.root))).toEqual(role);
    expect(await json(await send(c.s, "GET", "/v1/acl/roles", c.root))).toEqual([role]);

    // An update names the role by its ID; the path's ID stands in for a body without one.
    const renamed = await json<Role>(
      await send(c.s, "POST", `/v1/acl/role/${role.ID}`, c.root, {
        Name: "admins",
        Policies: [{ Name: "p3" }],
      }),
    );
    expect(renamed).toMatchObject({
      ID: role.ID,
      Name: "admins",
      Description: "",
      Policies: [{ Name: "p3" }],
      CreateIndex: index,
      ModifyIndex: c.s.log.lastIndex(),
    });
    const oldName = await send(c.s, "GET", "/v1/acl/role/name/ops", c.root);
    expect(oldName.status).toBe(404);
    expect(await oldName.text()).toBe("ACL role not found");

    // The same role again changes nothing: the stored role keeps its ModifyIndex.
    const same = await send(c.s, "PUT", `/v1/acl/role/${role.ID}`, c.root, renamed);
    expect((await json<Role>(same)).ModifyIndex).toBe(renamed.ModifyIndex);

    const del = await send(c.s, "DELETE", `/v1/acl/role/${role.ID}`, c.root);
    expect(del.status).toBe(200);
    expect(await del.text()).toBe("");
    expect(Number(del.headers.get("x-nomad-index"))).toBe(c.s.log.lastIndex());
    const gone = await send(c.s, "GET", `/v1/acl/role/${role.ID}`, c.root);
    expect(gone.status).toBe(404);
    expect(await gone.text()).toBe("ACL role not found");
    expect(await json(await send(c.s, "GET", "/v1/acl/roles", c.root))).toEqual([]);
  });

  it("refuses bad writes with Nomad's words and appends nothing", async () => {
    const c = await start();
    const ops = await createRole(c, { Name: "ops", Policies: [{ Name: "p1" }] });
    const dev = await createRole(c, { Name: "dev", Policies: [{ Name: "p2" }] });
    const before = c.s.log.lastIndex();
    const ghost = "00000000-0000-4000-8000-000000000000";
    const cases: [string, string, unknown, number, string][] = [
      ["POST", "/v1/acl/role", undefined, 400, "Request body is empty"],
      ["POST", "/v1/acl/role", { Name: "x", Policies: [{ Name: "nope" }] }, 400, "cannot find policy nope"],
      [
        "POST",
        "/v1/acl/role",
        { Name: "x", Policies: [{ Name: "p1" }, { Name: "nope" }, { Name: "p1" }] },
        400,
        "cannot find policy nope",
      ],
      [
        "POST",
        "/v1/acl/role",
        { Name: "ops", Policies: [{ Name: "p1" }] },
        400,
        "role with name ops already exists",
      ],
      // An ID in a create's body makes it an update of that role, which must exist.
      [
        "POST",
        "/v1/acl/role",
        { ID: ghost, Name: "x", Policies: [{ Name: "p1" }] },
        400,
        `cannot find role ${ghost}`,
      ],
      [
        "PUT",
        `/v1/acl/role/${ghost}`,
        { Name: "x", Policies: [{ Name: "p1" }] },
        400,
        `cannot find role ${ghost}`,
      ],
      [
        "PUT",
        `/v1/acl/role/${ops.ID}`,
        { ID: dev.ID, Name: "ops", Policies: [{ Name: "p1" }] },
        400,
        "ACL role ID does not match request path",
      ],
      [
        "PUT",
        `/v1/acl/role/${ops.ID}`,
        { ID: ops.ID, Name: "dev", Policies: [{ Name: "p1" }] },
        400,
        "ACL role with name dev already exists",
      ],
      [
        "POST",
        "/v1/acl/role",
        { Name: "bad name", Policies: [] },
        400,
        "role 0 invalid: 2 errors occurred:\n\t* invalid name 'bad name'\n\t* at least one policy should be specified\n\n",
      ],
      [
        "POST",
        "/v1/acl/role",
        { Name: "long", Description: "é".repeat(129), Policies: [{ Name: "p1" }] },
        400,
        "role 0 invalid: 1 error occurred:\n\t* description longer than 256\n\n",
      ],
      ["POST", "/v1/acl/role", { Name: "x", Policies: "p1" }, 400, "body.Policies must be array,null"],
      ["DELETE", `/v1/acl/role/${ghost}`, undefined, 404, "ACL role not found"],
      ["GET", "/v1/acl/role/", undefined, 400, "missing ACL role ID"],
      ["GET", "/v1/acl/role/name/", undefined, 400, "missing ACL role name"],
      ["GET", "/v1/acl/role", undefined, 405, "Invalid method"],
      ["DELETE", "/v1/acl/roles", undefined, 405, "Invalid method"],
      ["PUT", "/v1/acl/role/name/ops", undefined, 405, "Invalid method"],
    ];
    for (const [method, path, body, status, text] of cases) {
      const res = await send(c.s, method, path, c.root, body);
      const got = await res.text();
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}: ${got}`).toBe(status);
      expect(got).toBe(text);
    }
    expect(c.s.log.lastIndex()).toBe(before);
    const stored = await json<Role[]>(await send(c.s, "GET", "/v1/acl/roles", c.root));
    expect(stored.map((r) => r.Name).sort()).toEqual(["dev", "ops"]);
  });

  it("keeps a token's link through a rename, and its role's policy after the policy is deleted", async () => {
    const c = await start();
    const role = await createRole(c, { Name: "ops", Policies: [{ Name: "p1" }, { Name: "p2" }] });
    const client = await clientToken(c, { Roles: [{ Name: "ops" }] });

    const renamed = await json<Role>(
      await send(c.s, "PUT", `/v1/acl/role/${role.ID}`, c.root, { ...role, Name: "operators" }),
    );
    expect(renamed.ID).toBe(role.ID);

    const self = await json<{ Roles: { ID: string; Name: string }[] }>(
      await send(c.s, "GET", "/v1/acl/token/self", client),
    );
    expect(self.Roles).toEqual([{ ID: role.ID, Name: "operators" }]);
    expect(await json(await send(c.s, "GET", `/v1/acl/role/${role.ID}`, client))).toEqual(renamed);
    expect(await json(await send(c.s, "GET", "/v1/acl/role/name/operators", client))).toEqual(renamed);
    // The token's links carry the role's current name: the old one is not linked any more.
    expect((await send(c.s, "GET", "/v1/acl/role/name/ops", client)).status).toBe(403);
    const viaRole = await json<{ Name: string }[]>(await send(c.s, "GET", "/v1/acl/policies", client));
    expect(viaRole.map((p) => p.Name)).toEqual(["p1", "p2"]);

    // Deleting a policy does not cascade: the role keeps naming it.
    expect((await send(c.s, "DELETE", "/v1/acl/policy/p2", c.root)).status).toBe(200);
    const kept = await json<Role>(await send(c.s, "GET", `/v1/acl/role/${role.ID}`, c.root));
    expect(kept.Policies).toEqual([{ Name: "p1" }, { Name: "p2" }]);
  });

  it("shows a caller who is not management only the roles its token links to", async () => {
    const c = await start();
    const mine = await createRole(c, { Name: "mine", Policies: [{ Name: "p1" }] });
    const theirs = await createRole(c, { Name: "theirs", Policies: [{ Name: "p2" }] });
    const client = await clientToken(c, { Roles: [{ ID: mine.ID }] });

    expect(await json(await send(c.s, "GET", "/v1/acl/roles", client))).toEqual([mine]);
    expect(await json(await send(c.s, "GET", `/v1/acl/role/${mine.ID}`, client))).toEqual(mine);
    for (const path of [`/v1/acl/role/${theirs.ID}`, "/v1/acl/role/name/theirs", "/v1/acl/role/name/ghost"]) {
      const res = await send(c.s, "GET", path, client);
      expect(res.status, path).toBe(403);
      expect(await res.text()).toBe("Permission denied");
    }
    // The anonymous token links to no role.
    expect(await json(await send(c.s, "GET", "/v1/acl/roles"))).toEqual([]);
    expect((await send(c.s, "GET", `/v1/acl/role/${mine.ID}`)).status).toBe(403);
    // Writes are management's.
    expect(
      (await send(c.s, "POST", "/v1/acl/role", client, { Name: "x", Policies: [{ Name: "p1" }] })).status,
    ).toBe(403);

    // `?prefix=` is on the role's ID, not its name.
    const byId = await json<Role[]>(
      await send(c.s, "GET", `/v1/acl/roles?prefix=${theirs.ID.slice(0, 8)}`, c.root),
    );
    expect(byId.map((r) => r.ID)).toEqual([theirs.ID]);
    expect(await json(await send(c.s, "GET", "/v1/acl/roles?prefix=theirs", c.root))).toEqual([]);
  });

  it("answers a blocking read of a role once it changes", async () => {
    const c = await start();
    const role = await createRole(c, { Name: "ops", Policies: [{ Name: "p1" }] });
    const waiting = send(c.s, "GET", `/v1/acl/role/${role.ID}?index=${role.ModifyIndex}&wait=10s`, c.root);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const update = await send(c.s, "PUT", `/v1/acl/role/${role.ID}`, c.root, { ...role, Description: "new" });
    const updated = await json<Role>(update);
    const res = await waiting;
    expect(await json(res)).toEqual(updated);
    expect(res.headers.get("x-nomad-index")).toBe(String(updated.ModifyIndex));
  });
});
