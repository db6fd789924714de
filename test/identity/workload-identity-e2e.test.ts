import { readFile } from "node:fs/promises";
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeProtectedHeader,
  type JSONWebKeySet,
  jwtVerify,
} from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import type { Envelope } from "../../streams/event-schema.ts";
import { allSchemas } from "../../streams/index.ts";
import { type AclServer, startAclServer } from "../acl/acl-fixtures.ts";
import { TestNode } from "../api/node-fixtures.ts";
import { filesUnder } from "../files-under.ts";

const job = (id: string) => ({
  ID: id,
  Name: id,
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
        {
          Name: "sidecar",
          Driver: "exec",
          Config: { command: "sleep" },
          Resources: { CPU: 100, MemoryMB: 64 },
        },
      ],
    },
  ],
});

interface ClientAlloc {
  readonly ID: string;
  readonly SigningKeyID: string;
  readonly SignedIdentities?: Record<string, string>;
}

describe("workload identities, end to end (ACLs on)", () => {
  let acl: AclServer;
  let node: TestNode;
  let allocID: string;
  let jwt: string;

  const as = async (secret: string, path: string, method = "GET", body?: unknown) => {
    const res = await acl.call(secret, path, method, body);
    const text = await res.text();
    return {
      status: res.status,
      text,
      body: text.startsWith("{") || text.startsWith("[") ? JSON.parse(text) : text,
    };
  };

  /** The allocations of `jobID`, as soon as the scheduler has placed one (blocking queries, no sleeps). */
  const placed = async (jobID: string): Promise<{ ID: string }[]> => {
    let index = 0;
    for (let i = 0; i < 50; i++) {
      const res = await acl.call(acl.root.SecretID, `/v1/job/${jobID}/allocations?index=${index}&wait=5s`);
      index = Number(res.headers.get("x-nomad-index"));
      const allocs = (await res.json()) as { ID: string }[];
      if (allocs.length > 0) return allocs;
    }
    throw new Error(`no allocation of ${jobID} was placed`);
  };

  beforeAll(async () => {
    acl = await startAclServer();
    node = new TestNode(acl.s);
    const fingerprint = {
      Drivers: { exec: { Detected: true, Healthy: true } },
      NodeResources: { Cpu: { CpuShares: 4000 }, Memory: { MemoryMB: 8192 }, Disk: { DiskMB: 100_000 } },
    };
    expect((await node.register(fingerprint)).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    await acl.write("/v1/jobs", { Job: job("web") });
    await acl.write("/v1/jobs", { Job: job("db") });
    allocID = (await placed("web"))[0]!.ID;
    await placed("db");
    await acl.write("/v1/var/nomad/jobs/web", { Items: { greeting: "hello web" } });
    await acl.write("/v1/var/nomad/jobs/db", { Items: { password: "not yours" } });
  }, 60_000);

  afterAll(async () => {
    await acl?.s.stop();
  });

  it("the client gets one JWT per task of its own allocation through the client RPC", async () => {
    const ids = await node.rpc<{ Allocs: Record<string, number> }>("Node.GetClientAllocs", {
      NodeID: node.id,
      SecretID: node.secret,
    });
    expect(ids.status, ids.text).toBe(200);
    const pulled = await node.rpc<{ Allocs: ClientAlloc[] }>("Alloc.GetAllocs", {
      AllocIDs: Object.keys(ids.body.Allocs),
    });
    expect(pulled.status, pulled.text).toBe(200);
    const mine = pulled.body.Allocs.find((a) => a.ID === allocID)!;
    expect(Object.keys(mine.SignedIdentities ?? {}).sort()).toEqual(["server", "sidecar"]);
    jwt = mine.SignedIdentities!.server!;
    expect(decodeProtectedHeader(jwt)).toEqual({ alg: "EdDSA", kid: mine.SigningKeyID, typ: "JWT" });
    // Over msgpack too, as Nomad's client speaks it.
    const packed = await node.rpc<{ Allocs: ClientAlloc[] }>(
      "Alloc.GetAllocs",
      { AllocIDs: [allocID] },
      { msgpack: true },
    );
    expect(packed.body.Allocs[0]!.SignedIdentities).toEqual(mine.SignedIdentities);
  });

  it("another node does not get them", async () => {
    const other = new TestNode(acl.s);
    expect((await other.register()).status).toBe(200);
    const pulled = await other.rpc<{ Allocs: ClientAlloc[] }>("Alloc.GetAllocs", { AllocIDs: [allocID] });
    expect(pulled.status, pulled.text).toBe(200);
    expect(pulled.body.Allocs[0]!.ID).toBe(allocID);
    expect(pulled.body.Allocs[0]).not.toHaveProperty("SignedIdentities");
  });

  it("verifies against the server's JWKS with jose, remote and local", async () => {
    const url = new URL(`${acl.s.url}/.well-known/jwks.json`);
    const remote = await jwtVerify(jwt, createRemoteJWKSet(url), { algorithms: ["EdDSA"] });
    expect(remote.payload).toMatchObject({
      nomad_namespace: "default",
      nomad_job_id: "web",
      nomad_allocation_id: allocID,
      nomad_task: "server",
    });
    const local = createLocalJWKSet((await (await fetch(url)).json()) as JSONWebKeySet);
    expect((await jwtVerify(jwt, local)).protectedHeader.kid).toBe(decodeProtectedHeader(jwt).kid);
  });

  it("the HTTP API shows the signing key but never the JWTs", async () => {
    const res = await as(acl.root.SecretID, `/v1/allocation/${allocID}`);
    expect(res.status).toBe(200);
    expect(res.body.SigningKeyID).toBe(decodeProtectedHeader(jwt).kid);
    expect(res.body).not.toHaveProperty("SignedIdentities");
    expect(res.text).not.toContain(jwt.split(".")[2]);
  });

  it("authenticates as X-Nomad-Token: whoami answers its claims", async () => {
    const res = await as(jwt, "/v1/acl/whoami");
    expect(res.status, res.text).toBe(200);
    expect(res.body.Identity).toMatchObject({
      ACLToken: null,
      ClientID: "",
      Claims: {
        nomad_namespace: "default",
        nomad_job_id: "web",
        nomad_allocation_id: allocID,
        nomad_task: "server",
      },
    });
  });

  it("reads its own job's variables, not another job's, and writes none", async () => {
    const own = await as(jwt, "/v1/var/nomad/jobs/web");
    expect(own.status, own.text).toBe(200);
    expect(own.body.Items).toEqual({ greeting: "hello web" });
    const other = await as(jwt, "/v1/var/nomad/jobs/db");
    expect(other.status, other.text).toBe(403);
    const write = await as(jwt, "/v1/var/nomad/jobs/web", "PUT", { Items: { greeting: "changed" } });
    expect(write.status, write.text).toBe(403);
  });

  it("is granted what a policy attached to its job grants, and nothing before", async () => {
    expect((await as(jwt, "/v1/job/web")).status).toBe(403);
    await acl.write("/v1/acl/policy/web-workload", {
      Name: "web-workload",
      Rules: `namespace "default" {
  policy = "read"
  variables {
    path "nomad/jobs/web/*" {
      capabilities = ["write", "read"]
    }
  }
}`,
      JobACL: { Namespace: "default", JobID: "web", Group: "frontend", Task: "server" },
    });
    const read = await as(jwt, "/v1/job/web");
    expect(read.status, read.text).toBe(200);
    expect(read.body.ID).toBe("web");
    expect((await as(jwt, "/v1/job/db")).status).toBe(200); // namespace-wide read, as the policy says
    const write = await as(jwt, "/v1/var/nomad/jobs/web/state", "PUT", { Items: { step: "1" } });
    expect(write.status, write.text).toBe(200);
    // The write is recorded as the workload's.
    const codec = new EnvelopeCodec(allSchemas);
    let writer: Envelope["by"];
    for await (const batch of acl.s.log.read(1)) {
      for (const r of batch) {
        const e = codec.decode(r.bytes);
        if (e.type === "VariableApplied" && (e.data as { Path: string }).Path === "nomad/jobs/web/state")
          writer = e.by;
      }
      if (writer) break;
    }
    expect(writer).toMatchObject({ kind: "workload", id: `${allocID}:server` });
  });

  it("is refused with a bad signature or an unknown key", async () => {
    const [h, p, s] = jwt.split(".") as [string, string, string];
    const flipped = Buffer.from(s, "base64url");
    flipped[0] = flipped[0]! ^ 1;
    const tampered = await as(`${h}.${p}.${flipped.toString("base64url")}`, "/v1/acl/whoami");
    expect(tampered.status).toBe(403);
    const claims = JSON.parse(Buffer.from(p, "base64url").toString()) as Record<string, unknown>;
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, nomad_job_id: "db" })).toString("base64url")}.${s}`;
    expect((await as(forged, "/v1/var/nomad/jobs/db")).status).toBe(403);
  });

  it("no file of the data dir holds a JWT", async () => {
    const pulled = await node.rpc<{ Allocs: ClientAlloc[] }>("Alloc.GetAllocs", { AllocIDs: [allocID] });
    const jwts = Object.values(pulled.body.Allocs[0]!.SignedIdentities ?? {});
    expect(jwts).toHaveLength(2);
    // Flushed to disk: the snapshot and the log segments are all there is.
    await acl.s.flushLog();
    const files = await filesUnder(acl.s.dataDir);
    let signingKeyRecorded = false;
    for (const file of files) {
      const bytes = await readFile(file);
      // What the log does keep: the key that signed them.
      if (bytes.includes(decodeProtectedHeader(jwt).kid!)) signingKeyRecorded = true;
      for (const token of jwts) {
        const signature = token.split(".")[2]!;
        expect(bytes.includes(token), `a JWT in ${file}`).toBe(false);
        expect(bytes.includes(signature), `a JWT signature in ${file}`).toBe(false);
        expect(bytes.includes(Buffer.from(signature, "base64url")), `raw JWT signature in ${file}`).toBe(
          false,
        );
      }
    }
    expect(signingKeyRecorded).toBe(true);
  });
});
