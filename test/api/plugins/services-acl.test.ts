import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AclServer, startAclServer } from "../../acl/acl-fixtures.ts";
import { TestNode } from "../node-fixtures.ts";

const job = {
  ID: "web",
  Name: "web",
  Type: "service",
  Datacenters: ["dc1"],
  TaskGroups: [
    {
      Name: "frontend",
      Count: 1,
      Tasks: [
        {
          Name: "server",
          Driver: "exec",
          Config: { command: "sleep" },
          Resources: { CPU: 100, MemoryMB: 64 },
        },
      ],
    },
  ],
};

describe("service registrations under ACLs", () => {
  let acl: AclServer;
  let node: TestNode;
  let allocID: string;
  let jwt: string;
  let reader: string;
  let submitter: string;

  const registration = (name: string) => ({
    ID: `_nomad-task-${allocID}-server-${name}-http`,
    ServiceName: name,
    Namespace: "default",
    NodeID: node.id,
    Datacenter: "dc1",
    JobID: "web",
    AllocID: allocID,
    Tags: [],
    Address: "10.0.0.7",
    Port: 8080,
  });
  const status = async (secret: string | undefined, path: string, method = "GET") =>
    (await acl.call(secret, path, method)).status;

  beforeAll(async () => {
    acl = await startAclServer();
    node = new TestNode(acl.s);
    const fingerprint = {
      Drivers: { exec: { Detected: true, Healthy: true } },
      NodeResources: { Cpu: { CpuShares: 4000 }, Memory: { MemoryMB: 8192 }, Disk: { DiskMB: 100_000 } },
    };
    expect((await node.register(fingerprint)).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    await acl.write("/v1/jobs", { Job: job });
    let index = 0;
    for (let i = 0; i < 50 && !allocID; i++) {
      const res = await acl.call(acl.root.SecretID, `/v1/job/web/allocations?index=${index}&wait=5s`);
      index = Number(res.headers.get("x-nomad-index"));
      allocID = ((await res.json()) as { ID: string }[])[0]?.ID ?? "";
    }
    expect(allocID).not.toBe("");
    const pulled = await node.rpc<{ Allocs: { SignedIdentities?: Record<string, string> }[] }>(
      "Alloc.GetAllocs",
      { AllocIDs: [allocID] },
    );
    jwt = pulled.body.Allocs[0]!.SignedIdentities!.server!;
    await acl.policy("reader", `namespace "default" { capabilities = ["read-job"] }`);
    await acl.policy("submitter", `namespace "default" { capabilities = ["submit-job"] }`);
    reader = (await acl.token(["reader"])).SecretID;
    submitter = (await acl.token(["submitter"])).SecretID;
    const up = await node.rpc("ServiceRegistration.Upsert", {
      Services: [registration("web"), registration("db")],
    });
    expect(up.status, up.text).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await acl?.s.stop();
  });

  it("reads with read-job, or as any workload identity, and refuses anyone else", async () => {
    for (const path of ["/v1/services", "/v1/service/web"]) {
      expect(await status(undefined, path), path).toBe(403);
      expect(await status(submitter, path), path).toBe(403);
      expect(await status(reader, path), path).toBe(200);
      // Nomad skips the capability check for a workload's claims.
      expect(await status(jwt, path), path).toBe(200);
    }
    // The wildcard listing filters namespaces instead of refusing.
    const all = await acl.call(undefined, "/v1/services?namespace=*");
    expect(all.status).toBe(200);
    expect(await all.json()).toEqual([]);
    const readable = await acl.call(reader, "/v1/services?namespace=*");
    expect(((await readable.json()) as { Namespace: string }[]).map((n) => n.Namespace)).toEqual(["default"]);
    expect(await status(reader, "/v1/job/web/services")).toBe(200);
    expect(await status(submitter, `/v1/allocation/${allocID}/services`)).toBe(403);
  });

  it("deletes with submit-job, or with the node's own SecretID", async () => {
    const web = registration("web").ID;
    expect(await status(reader, `/v1/service/web/${web}`, "DELETE")).toBe(403);
    expect(await status(submitter, `/v1/service/web/${web}`, "DELETE")).toBe(200);
    // Nomad's fallback: a SecretID it does not know as a token may be a node's.
    const db = registration("db").ID;
    expect(await status(node.secret, `/v1/service/db/${db}`, "DELETE")).toBe(200);
    expect(await status(acl.root.SecretID, `/v1/service/db/${db}`, "DELETE")).toBe(404);
    const left = await acl.call(reader, "/v1/services");
    expect(await left.json()).toEqual([]);
  });
});
