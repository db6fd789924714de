import { afterEach, describe, expect, it } from "vitest";
import { Scenario, serviceJob } from "../../services/scheduler/scenario.ts";
import { TestNode } from "../node-fixtures.ts";

const scenarios: Scenario[] = [];
async function start() {
  const s = await Scenario.start();
  scenarios.push(s);
  return s;
}
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

const DAY_NS = 86_400_000_000_000;
const NAME_REGEX = "^[a-zA-Z0-9-_]{1,128}$";

interface Pool {
  Name: string;
  Description: string;
  Meta: Record<string, string> | null;
  SchedulerConfiguration: unknown;
  NodeIdentityTTL: number;
  CreateIndex: number;
  ModifyIndex: number;
}

const names = (body: unknown) => (body as { Name: string }[]).map((p) => p.Name);

describe("node pools", () => {
  it("has the built-in pools all and default from the start, at /v1/node/pools (not taken for a node ID)", async () => {
    const s = await start();
    const res = await s.call("/v1/node/pools");
    expect(res.status, res.text).toBe(200);
    expect(res.index).toBe(1);
    expect(res.body).toEqual([
      {
        Name: "all",
        Description: "Node pool with all nodes in the cluster.",
        Meta: null,
        SchedulerConfiguration: null,
        NodeIdentityTTL: DAY_NS,
        CreateIndex: 1,
        ModifyIndex: 1,
      },
      {
        Name: "default",
        Description: "Default node pool.",
        Meta: null,
        SchedulerConfiguration: null,
        NodeIdentityTTL: DAY_NS,
        CreateIndex: 1,
        ModifyIndex: 1,
      },
    ]);
    const one = await s.call("/v1/node/pool/default");
    expect(one.status).toBe(200);
    expect((one.body as Pool).Description).toBe("Default node pool.");
    expect(one.index).toBe(1);
  });

  it("creates and updates a pool from a NodePool body, keeping its CreateIndex", async () => {
    const s = await start();
    const put = await s.call("/v1/node/pools", "PUT", { Name: "dev-1", NodeIdentityTTL: "720h0m0s" });
    expect(put.status, put.text).toBe(200);
    expect(put.text).toBe("");
    const created = (await s.call("/v1/node/pool/dev-1")).body as Pool;
    expect(created).toEqual({
      Name: "dev-1",
      Description: "",
      Meta: null,
      SchedulerConfiguration: null,
      NodeIdentityTTL: 720 * 3_600_000_000_000,
      CreateIndex: put.index,
      ModifyIndex: put.index,
    });

    const post = await s.call("/v1/node/pool/dev-1", "POST", {
      Name: "dev-1",
      Description: "test",
      Meta: { team: "a" },
      SchedulerConfiguration: { SchedulerAlgorithm: "spread" },
      CreateIndex: 999,
    });
    expect(post.status, post.text).toBe(200);
    const updated = (await s.call("/v1/node/pool/dev-1")).body as Pool;
    expect(updated).toMatchObject({
      Description: "test",
      Meta: { team: "a" },
      SchedulerConfiguration: { SchedulerAlgorithm: "spread", MemoryOversubscriptionEnabled: null },
      // No TTL sent: Nomad's default.
      NodeIdentityTTL: DAY_NS,
      CreateIndex: put.index,
      ModifyIndex: post.index,
    });
  });

  it("lists with prefix, filter, pages and reverse, as Nomad", async () => {
    const s = await start();
    for (const name of ["dev-1", "dev-2", "prod"]) {
      expect((await s.call("/v1/node/pools", "PUT", { Name: name })).status).toBe(200);
    }
    expect(names((await s.call("/v1/node/pools?prefix=d")).body)).toEqual(["default", "dev-1", "dev-2"]);
    const page1 = await s.call("/v1/node/pools?prefix=d&per_page=1");
    expect(names(page1.body)).toEqual(["default"]);
    const token = (await s.server.call("/v1/node/pools?prefix=d&per_page=1")).headers.get(
      "x-nomad-nexttoken",
    );
    expect(token).toBe("dev-1");
    expect(names((await s.call(`/v1/node/pools?prefix=d&per_page=1&next_token=${token}`)).body)).toEqual([
      "dev-1",
    ]);
    expect(names((await s.call("/v1/node/pools?reverse=true")).body)).toEqual([
      "prod",
      "dev-2",
      "dev-1",
      "default",
      "all",
    ]);
    const filter = encodeURIComponent('Name matches "^dev"');
    expect(names((await s.call(`/v1/node/pools?filter=${filter}`)).body)).toEqual(["dev-1", "dev-2"]);
  });

  it("refuses bad pools, built-in changes and name mismatches with Nomad's words, and writes nothing", async () => {
    const s = await start();
    const before = s.server.log.lastIndex();
    const cases: [string, string, unknown, number, string][] = [
      [
        "/v1/node/pools",
        "PUT",
        { Name: "*" },
        400,
        `invalid node pool "*": 1 error occurred:\n\t* invalid name "*", must match regex ${NAME_REGEX}\n\n`,
      ],
      [
        "/v1/node/pools",
        "PUT",
        { Name: "x", Description: "d".repeat(257) },
        400,
        `invalid node pool "x": 1 error occurred:\n\t* description longer than 256\n\n`,
      ],
      ["/v1/node/pools", "PUT", { Name: "default" }, 400, `modifying node pool "default" is not allowed`],
      [
        "/v1/node/pools",
        "POST",
        { Name: "all", Description: "mine" },
        400,
        `modifying node pool "all" is not allowed`,
      ],
      ["/v1/node/pool/dev", "PUT", { Name: "other" }, 400, "Node pool name does not match request path"],
      ["/v1/node/pools", "PUT", { Name: "x", NodeIdentityTTL: "soon" }, 400, `time: invalid duration "soon"`],
      ["/v1/node/pools", "PUT", { Name: "x", Description: 5 }, 400, "body.Description must be string"],
      ["/v1/node/pool/all", "DELETE", undefined, 400, `deleting node pool "all" is not allowed`],
      ["/v1/node/pool/ghost", "DELETE", undefined, 404, "node pool ghost not found"],
      ["/v1/node/pool/node%2Fpool", "DELETE", undefined, 404, "node pool node/pool not found"],
      ["/v1/node/pool/node%2Fpool", "GET", undefined, 404, "node pool not found"],
      ["/v1/node/pools", "DELETE", undefined, 405, "Invalid method"],
      ["/v1/node/pool/default/nodes", "PUT", undefined, 405, "Invalid method"],
    ];
    for (const [path, method, body, status, text] of cases) {
      const res = await s.call(path, method, body);
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(status);
      expect(res.text).toBe(text);
    }
    expect(s.server.log.lastIndex()).toBe(before);
  });

  it("deletes a pool nobody uses; a node registering in an unknown pool creates it", async () => {
    const s = await start();
    const put = await s.call("/v1/node/pools", "PUT", { Name: "dev-1" });
    const del = await s.call("/v1/node/pool/dev-1", "DELETE");
    expect(del.status, del.text).toBe(200);
    expect(del.index).toBe(put.index + 1);
    expect((await s.call("/v1/node/pool/dev-1")).status).toBe(404);

    const gpu = await s.addNode({ NodePool: "gpu" });
    const node = (await s.call(`/v1/node/${gpu.id}`)).body as { NodePool: string; CreateIndex: number };
    expect(node.NodePool).toBe("gpu");
    const pool = (await s.call("/v1/node/pool/gpu")).body as Pool;
    expect(pool).toMatchObject({ Name: "gpu", Description: "", NodeIdentityTTL: DAY_NS });
    // Created in the node's own record, as Nomad does in the node's transaction.
    expect(pool.CreateIndex).toBe(node.CreateIndex);

    const inUse = await s.call("/v1/node/pool/gpu", "DELETE");
    expect(inUse.status).toBe(400);
    expect(inUse.text).toBe(`1 error occurred:\n\t* node pool "gpu" has nodes in regions: [global]\n\n`);
  });

  it("refuses a node that names the pool all or an invalid pool", async () => {
    const s = await start();
    const all = await s.call("/v1/node/pools");
    const node = new TestNode(s.server);
    const intoAll = await node.register({ NodePool: "all" });
    expect(intoAll.status).toBe(400);
    expect(intoAll.text).toBe(`node is not allowed to register in node pool "all"`);
    const invalid = await node.register({ NodePool: "no spaces" });
    expect(invalid.status).toBe(400);
    expect(invalid.text).toBe(`invalid node pool: invalid name "no spaces", must match regex ${NAME_REGEX}`);
    expect((await s.call("/v1/node/pools")).body).toEqual(all.body);
  });

  it("lists a pool's nodes (all: every node) and jobs, and refuses prefix and bad booleans", async () => {
    const s = await start();
    const plain = await s.addNode();
    const gpu = await s.addNode({ NodePool: "gpu" });
    const ids = (body: unknown) => (body as { ID: string }[]).map((n) => n.ID);
    expect(ids((await s.call("/v1/node/pool/gpu/nodes")).body)).toEqual([gpu.id]);
    expect(ids((await s.call("/v1/node/pool/default/nodes")).body)).toEqual([plain.id]);
    expect(ids((await s.call("/v1/node/pool/all/nodes")).body).sort()).toEqual([plain.id, gpu.id].sort());
    expect((await s.call("/v1/node/pool/ghost/nodes")).body).toEqual([]);
    const stub = ((await s.call("/v1/node/pool/gpu/nodes?resources=1")).body as Record<string, unknown>[])[0];
    expect(stub).toMatchObject({ ID: gpu.id, NodePool: "gpu", NodeResources: { Cpu: { CpuShares: 4000 } } });

    const badPrefix = await s.call("/v1/node/pool/gpu/nodes?prefix=ab");
    expect([badPrefix.status, badPrefix.text]).toEqual([400, "prefix argument not allowed"]);
    const badBool = await s.call("/v1/node/pool/gpu/nodes?os=yes");
    expect(badBool.status).toBe(400);
    expect(badBool.text).toBe(
      'Failed to parse node list fields: Failed to parse value of "os" (yes) as a bool: strconv.ParseBool: parsing "yes": invalid syntax',
    );

    await s.register(serviceJob("on-gpu", 1, { NodePool: "gpu", Meta: { team: "ml" } }));
    await s.register(serviceJob("plain", 1));
    await s.idle();
    const jobs = (await s.call("/v1/node/pool/gpu/jobs?meta=true")).body as Record<string, unknown>[];
    expect(jobs.map((j) => j.ID)).toEqual(["on-gpu"]);
    expect(jobs[0]).toMatchObject({ NodePool: "gpu", Meta: { team: "ml" } });
    expect(((await s.call("/v1/node/pool/default/jobs")).body as { ID: string }[]).map((j) => j.ID)).toEqual([
      "plain",
    ]);
    expect(((await s.call("/v1/node/pool/gpu/jobs?namespace=*")).body as unknown[]).length).toBe(1);
    expect((await s.call("/v1/node/pool/gpu/jobs?prefix=on")).status).toBe(400);

    const inUse = await s.call("/v1/node/pool/gpu", "DELETE");
    expect(inUse.text).toBe(
      `2 errors occurred:\n\t* node pool "gpu" has non-terminal jobs in regions: [global]\n\t* node pool "gpu" has nodes in regions: [global]\n\n`,
    );
  });

  it("gives jobs the default pool, refuses a pool that does not exist, and shows NodePool", async () => {
    const s = await start();
    const before = s.server.log.lastIndex();
    const missing = await s.call("/v1/jobs", "PUT", { Job: serviceJob("web", 1, { NodePool: "nope" }) });
    expect(missing.status).toBe(400);
    expect(missing.text).toBe(`job "web" is in nonexistent node pool "nope"`);
    expect(s.server.log.lastIndex()).toBe(before);

    await s.register(serviceJob("web", 1));
    const job = (await s.call("/v1/job/web")).body as {
      NodePool: string;
      TaskGroups: { Update: Record<string, unknown> }[];
    };
    expect(job.NodePool).toBe("default");
    expect(job.TaskGroups[0]!.Update).toMatchObject({ MaxParallel: 1, ProgressDeadline: 600e9 });
    const stubs = (await s.call("/v1/jobs")).body as Record<string, unknown>[];
    expect(stubs[0]).toMatchObject({ ID: "web", NodePool: "default" });
  });
});

describe("node and allocation shapes", () => {
  it("shows Drain, NodePool and complete legacy Resources and Reserved on a node", async () => {
    const s = await start();
    const n = await s.addNode({ ReservedResources: { Cpu: { CpuShares: 100 }, Memory: { MemoryMB: 256 } } });
    // An allocation to migrate keeps the node draining while nobody reports it stopped.
    await s.register(serviceJob("web", 1));
    await s.idle();
    const node = (await s.call(`/v1/node/${n.id}`)).body as Record<string, unknown>;
    expect(node).toMatchObject({
      NodePool: "default",
      Drain: false,
      Resources: {
        CPU: 4000,
        Cores: 0,
        MemoryMB: 8192,
        MemoryMaxMB: 0,
        DiskMB: 100_000,
        IOPS: 0,
        Networks: null,
        Devices: null,
      },
      Reserved: { CPU: 100, MemoryMB: 256, DiskMB: 0 },
    });
    const drain = await s.call(`/v1/node/${n.id}/drain`, "PUT", { DrainSpec: { Deadline: 60e9 } });
    expect(drain.status, drain.text).toBe(200);
    const draining = (await s.call(`/v1/node/${n.id}`)).body as { Drain: boolean; DrainStrategy: unknown };
    expect(draining.DrainStrategy).not.toBeNull();
    expect(draining.Drain).toBe(true);
  });

  it("gives allocations the legacy Resources total beside TaskResources", async () => {
    const s = await start();
    const n = await s.addNode();
    await s.register(
      serviceJob(
        "web",
        1,
        {},
        {
          EphemeralDisk: { SizeMB: 150 },
          Tasks: [
            { Name: "a", Driver: "docker", Resources: { CPU: 500, MemoryMB: 256, MemoryMaxMB: 512 } },
            { Name: "b", Driver: "docker", Resources: { CPU: 100, MemoryMB: 64 } },
          ],
        },
      ),
    );
    await s.idle();
    const [placed] = s.allocs("web");
    expect(placed?.NodeID).toBe(n.id);
    const alloc = (await s.call(`/v1/allocation/${placed!.ID}`)).body as Record<string, unknown>;
    expect(alloc.Resources).toEqual({
      CPU: 600,
      Cores: 0,
      MemoryMB: 320,
      MemoryMaxMB: 576,
      DiskMB: 150,
      IOPS: 0,
      Networks: null,
      Devices: null,
    });
    expect(alloc.TaskResources).toMatchObject({
      a: { CPU: 500, MemoryMB: 256, MemoryMaxMB: 512 },
      b: { CPU: 100, MemoryMB: 64 },
    });
    const onNode = (await s.call(`/v1/node/${n.id}/allocations`)).body as { Resources: { DiskMB: number } }[];
    expect(onNode[0]!.Resources.DiskMB).toBe(150);
  });
});
