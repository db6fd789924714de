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

async function start(): Promise<Cluster> {
  const s = await startTestServer({ args: ["--acl-enabled"] });
  running.push(s);
  const boot = await s.call("/v1/acl/bootstrap", { method: "POST" });
  expect(boot.status, await boot.clone().text()).toBe(200);
  const { SecretID } = (await boot.json()) as { SecretID: string };
  return { s, root: SecretID };
}

function send(s: TestServer, method: string, path: string, token?: string, body?: unknown) {
  return s.call(path, {
    method,
    headers: token ? { "X-Nomad-Token": token } : {},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function putPolicy(c: Cluster, name: string, rules: string, extra: Record<string, unknown> = {}) {
  const res = await send(c.s, "PUT", `/v1/acl/policy/${name}`, c.root, {
    Name: name,
    Rules: rules,
    ...extra,
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return Number(res.headers.get("x-nomad-index"));
}

async function clientToken(c: Cluster, body: Record<string, unknown>): Promise<string> {
  const res = await send(c.s, "POST", "/v1/acl/token", c.root, { Name: "client", Type: "client", ...body });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { SecretID: string }).SecretID;
}

async function names(res: Response): Promise<string[]> {
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { Name: string }[]).map((p) => p.Name);
}

const READ_CAPABILITIES = [
  "list-jobs",
  "parse-job",
  "read-job",
  "csi-list-volume",
  "csi-read-volume",
  "read-job-scaling",
  "list-scaling-policies",
  "read-scaling-policy",
];

describe("/v1/acl/policy/:name and /v1/acl/policies", () => {
  it("creates, reads, updates, lists and deletes a policy as Nomad does", async () => {
    const c = await start();
    const empty = await send(c.s, "GET", "/v1/acl/policies", c.root);
    expect(await empty.json()).toEqual([]);
    // Nomad floors the list index at 1 for an empty table.
    expect(empty.headers.get("x-nomad-index")).toBe("1");

    const rules = 'namespace "default" {\n  policy = "read"\n}\n';
    const put = await send(c.s, "PUT", "/v1/acl/policy/readonly", c.root, {
      Name: "readonly",
      Description: "read the default namespace",
      Rules: rules,
    });
    expect(put.status).toBe(200);
    expect(await put.text()).toBe("");
    const created = Number(put.headers.get("x-nomad-index"));
    expect(created).toBe(c.s.log.lastIndex());

    const got = await send(c.s, "GET", "/v1/acl/policy/readonly", c.root);
    expect(got.status).toBe(200);
    expect(got.headers.get("x-nomad-index")).toBe(String(created));
    const policy = (await got.json()) as Record<string, unknown>;
    expect(Object.keys(policy)).toEqual([
      "Name",
      "Description",
      "Rules",
      "RulesJSON",
      "JobACL",
      "Hash",
      "CreateIndex",
      "ModifyIndex",
    ]);
    expect(policy).toMatchObject({
      Name: "readonly",
      Description: "read the default namespace",
      Rules: rules,
      JobACL: null,
      CreateIndex: created,
      ModifyIndex: created,
    });
    // BLAKE2b-256, base64.
    expect(Buffer.from(policy.Hash as string, "base64")).toHaveLength(32);
    expect(policy.RulesJSON).toEqual({
      Namespaces: [{ Name: "default", Policy: "read", Capabilities: READ_CAPABILITIES, Variables: null }],
      NodePools: null,
      HostVolumes: null,
      Agent: null,
      Node: null,
      Operator: null,
      Quota: null,
      Plugin: null,
      Raw: rules,
    });

    const post = await send(c.s, "POST", "/v1/acl/policy/readonly", c.root, {
      Name: "readonly",
      Description: "changed",
      Rules: rules,
    });
    expect(post.status).toBe(200);
    const updated = Number(post.headers.get("x-nomad-index"));
    expect(updated).toBeGreaterThan(created);
    const again = (await (await send(c.s, "GET", "/v1/acl/policy/readonly", c.root)).json()) as Record<
      string,
      unknown
    >;
    expect(again).toMatchObject({ Description: "changed", CreateIndex: created, ModifyIndex: updated });
    expect(again.Hash).not.toBe(policy.Hash);

    await putPolicy(c, "ops", 'operator { policy = "read" }');
    const list = await send(c.s, "GET", "/v1/acl/policies", c.root);
    const stubs = (await list.json()) as Record<string, unknown>[];
    expect(stubs.map((p) => p.Name)).toEqual(["ops", "readonly"]);
    expect(Object.keys(stubs[1] ?? {})).toEqual([
      "Name",
      "Description",
      "Hash",
      "CreateIndex",
      "ModifyIndex",
    ]);
    expect(list.headers.get("x-nomad-index")).toBe(String(c.s.log.lastIndex()));
    expect(await names(await send(c.s, "GET", "/v1/acl/policies?prefix=re", c.root))).toEqual(["readonly"]);

    const del = await send(c.s, "DELETE", "/v1/acl/policy/readonly", c.root);
    expect(del.status).toBe(200);
    expect(await del.text()).toBe("");
    expect(Number(del.headers.get("x-nomad-index"))).toBe(c.s.log.lastIndex());
    const gone = await send(c.s, "GET", "/v1/acl/policy/readonly", c.root);
    expect(gone.status).toBe(404);
    expect(await gone.text()).toBe("ACL policy not found");
    // A missing policy answers with the table's index, not a floored one.
    expect(gone.headers.get("x-nomad-index")).toBe(String(c.s.log.lastIndex()));
    expect(await names(await send(c.s, "GET", "/v1/acl/policies", c.root))).toEqual(["ops"]);

    // Nomad deletes what exists of the names: deleting a missing policy is no error.
    const before = c.s.log.lastIndex();
    const ghost = await send(c.s, "DELETE", "/v1/acl/policy/ghost", c.root);
    expect(ghost.status).toBe(200);
    expect(Number(ghost.headers.get("x-nomad-index"))).toBeGreaterThan(before);
  });

  it("shows JSON rules parsed, and the job a policy is attached to", async () => {
    const c = await start();
    const rules = JSON.stringify({ namespace: { default: { policy: "scale" } }, node: { policy: "read" } });
    await putPolicy(c, "web-job", rules, {
      JobACL: { Namespace: "default", JobID: "web", Group: "", Task: "" },
    });
    const got = (await (await send(c.s, "GET", "/v1/acl/policy/web-job", c.root)).json()) as Record<
      string,
      unknown
    >;
    expect(got.JobACL).toEqual({ Namespace: "default", JobID: "web", Group: "", Task: "" });
    expect(got.RulesJSON).toMatchObject({
      Namespaces: [
        {
          Name: "default",
          Policy: "scale",
          Capabilities: ["list-scaling-policies", "read-scaling-policy", "read-job-scaling", "scale-job"],
        },
      ],
      Node: { Policy: "read" },
      Raw: rules,
    });
  });

  it("refuses bad writes with Nomad's words and appends nothing", async () => {
    const c = await start();
    await putPolicy(c, "existing", 'agent { policy = "read" }');
    const before = c.s.log.lastIndex();
    const long = "x".repeat(257);
    const cases: [string, string, unknown, string | RegExp][] = [
      ["PUT", "/v1/acl/policy/a", { Name: "b", Rules: "" }, "ACL policy name does not match request path"],
      ["PUT", "/v1/acl/policy/a", {}, "ACL policy name does not match request path"],
      ["POST", "/v1/acl/policy/a", undefined, "Request body is empty"],
      [
        "PUT",
        "/v1/acl/policy/bad_name",
        { Name: "bad_name", Rules: 'agent { policy = "read" }' },
        "policy 0 invalid: 1 error occurred:\n\t* invalid name 'bad_name'\n\n",
      ],
      [
        "PUT",
        "/v1/acl/policy/long",
        { Name: "long", Description: long, Rules: 'agent { policy = "read" }' },
        "policy 0 invalid: 1 error occurred:\n\t* description longer than 256\n\n",
      ],
      [
        "PUT",
        "/v1/acl/policy/jobs",
        { Name: "jobs", Rules: 'agent { policy = "read" }', JobACL: { JobID: "web", Task: "t" } },
        "policy 0 invalid: 2 errors occurred:\n\t* namespace must be set to set job ID\n\t* group must be set to set task\n\n",
      ],
      [
        "PUT",
        "/v1/acl/policy/broken",
        { Name: "broken", Rules: 'namespace "default" {\n  policy = = "read"\n}\n' },
        // The error names line 2: Nomad's HCL v1 as `At 2:…`, chronomad's HCL2 parser as `input.hcl:2,…`.
        /^policy 0 invalid: 1 error occurred:\n\t\* failed to parse rules: Failed to parse ACL Policy: (At 2:|input\.hcl:2,)/,
      ],
      [
        "PUT",
        "/v1/acl/policy/bad-level",
        { Name: "bad-level", Rules: 'namespace "default" { policy = "admin" }' },
        /^policy 0 invalid: 1 error occurred:\n\t\* failed to parse rules: Invalid namespace policy/,
      ],
      [
        "PUT",
        "/v1/acl/policy/huge",
        { Name: "huge", Rules: `# ${"x".repeat(32 * 1024)}\nagent { policy = "read" }` },
        "policy 0 invalid: 1 error occurred:\n\t* rules longer than 32768 bytes\n\n",
      ],
      ["PUT", "/v1/acl/policy/typed", { Name: "typed", Rules: 5 }, "body.Rules must be string"],
      ["PUT", "/v1/acl/policy/", { Name: "", Rules: "" }, "Missing Policy Name"],
    ];
    for (const [method, path, body, text] of cases) {
      const res = await send(c.s, method, path, c.root, body);
      const got = await res.text();
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}: ${got}`).toBe(400);
      if (typeof text === "string") expect(got).toBe(text);
      else expect(got).toMatch(text);
    }
    expect(c.s.log.lastIndex()).toBe(before);
    expect(await names(await send(c.s, "GET", "/v1/acl/policies", c.root))).toEqual(["existing"]);
  });

  it("shows a caller who is not management only the policies its token links to", async () => {
    const c = await start();
    await putPolicy(c, "direct", 'namespace "default" { policy = "read" }');
    await putPolicy(c, "via-role", 'node { policy = "read" }');
    await putPolicy(c, "other", 'agent { policy = "read" }');
    await putPolicy(c, "anonymous", 'namespace "default" { policy = "read" }');
    const role = await send(c.s, "POST", "/v1/acl/role", c.root, {
      Name: "reader",
      Policies: [{ Name: "via-role" }],
    });
    expect(role.status, await role.clone().text()).toBe(200);
    const { ID } = (await role.json()) as { ID: string };
    const client = await clientToken(c, { Policies: ["direct", "not-yet"], Roles: [{ ID }] });

    expect(await names(await send(c.s, "GET", "/v1/acl/policies", client))).toEqual(["direct", "via-role"]);
    expect(await names(await send(c.s, "GET", "/v1/acl/policies", c.root))).toEqual([
      "anonymous",
      "direct",
      "other",
      "via-role",
    ]);
    for (const name of ["direct", "via-role", "anonymous"]) {
      const res = await send(c.s, "GET", `/v1/acl/policy/${name}`, client);
      expect(res.status, name).toBe(200);
      expect(((await res.json()) as { Name: string }).Name).toBe(name);
    }
    // Not linked: refused before the lookup, whether or not the policy exists.
    for (const name of ["other", "ghost"]) {
      const res = await send(c.s, "GET", `/v1/acl/policy/${name}`, client);
      expect(res.status, name).toBe(403);
      expect(await res.text()).toBe("Permission denied");
    }
    // Linked by name before it exists: the link shows it once it does.
    const linkedMissing = await send(c.s, "GET", "/v1/acl/policy/not-yet", client);
    expect(linkedMissing.status).toBe(404);
    await putPolicy(c, "not-yet", 'plugin { policy = "read" }');
    expect(await names(await send(c.s, "GET", "/v1/acl/policies", client))).toEqual([
      "direct",
      "not-yet",
      "via-role",
    ]);

    // Without a token, the caller holds the anonymous token and its one policy.
    expect(await names(await send(c.s, "GET", "/v1/acl/policies"))).toEqual(["anonymous"]);
    expect((await send(c.s, "GET", "/v1/acl/policy/anonymous")).status).toBe(200);
    expect((await send(c.s, "GET", "/v1/acl/policy/direct")).status).toBe(403);

    // Writes are management's.
    const write = await send(c.s, "PUT", "/v1/acl/policy/direct", client, { Name: "direct", Rules: "" });
    expect(write.status).toBe(403);
  });

  it("answers a blocking list once a policy is written", async () => {
    const c = await start();
    const first = await send(c.s, "GET", "/v1/acl/policies", c.root);
    const index = Number(first.headers.get("x-nomad-index"));
    const waiting = send(c.s, "GET", `/v1/acl/policies?index=${index}&wait=10s`, c.root);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const written = await putPolicy(c, "late", 'agent { policy = "read" }');
    const res = await waiting;
    expect(await names(res)).toEqual(["late"]);
    expect(Number(res.headers.get("x-nomad-index"))).toBe(written);
  });
});
