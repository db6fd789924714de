import { afterEach, describe, expect, it } from "vitest";
import { rpcEndpoint, rpcOperation } from "../../src/metrics/rpc-rate-metrics.ts";
import { startAclServer } from "../acl/acl-fixtures.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

describe("RPC rate metrics", () => {
  it("names the RPC endpoint and operation a route stands for", () => {
    expect(rpcEndpoint("/v1/jobs")).toBe("job");
    expect(rpcEndpoint("/v1/node/pool/:name")).toBe("node_pool");
    expect(rpcEndpoint("/v1/operator/keyring/keys")).toBe("keyring");
    expect(rpcEndpoint("/v1/rpc/Node.UpdateStatus")).toBe("node");
    expect(rpcEndpoint("/v1/acl/token/:accessor")).toBe("acl");
    expect(rpcEndpoint("/v1/metrics")).toBeUndefined();
    expect(rpcOperation("GET", "/v1/jobs")).toBe("list");
    expect(rpcOperation("GET", "/v1/job/:id/allocations")).toBe("list");
    expect(rpcOperation("GET", "/v1/job/:id")).toBe("read");
    expect(rpcOperation("PUT", "/v1/jobs")).toBe("write");
  });

  it("labels each count with the caller's identity when ACLs are on", async () => {
    const acl = await startAclServer();
    running.push(acl.s);
    await acl.policy("readers", `namespace "default" { policy = "read" }`);
    const reader = await acl.token(["readers"]);
    expect((await acl.call(reader.SecretID, "/v1/jobs")).status).toBe(200);
    expect((await acl.call(undefined, "/v1/jobs")).status).toBe(403);
    const text = await (await acl.call(undefined, "/v1/metrics?format=prometheus")).text();
    expect(text).toMatch(new RegExp(`nomad_rpc_job_list\\{identity="token:${reader.AccessorID}"\\} 1`));
    expect(text).toMatch(/nomad_rpc_job_list\{identity="token:anonymous"\} 1/);
    expect(text).toMatch(/nomad_rpc_acl_write\{identity="token:anonymous"\} 1/);
  });

  it("counts without labels when ACLs are off or the labels are turned off", async () => {
    for (const args of [[], ["--acl-enabled", "--disable-rpc-rate-metrics-labels"]]) {
      const s = await startTestServer({ args });
      running.push(s);
      await s.call("/v1/jobs");
      const text = await (await s.call("/v1/metrics?format=prometheus")).text();
      expect(text).toMatch(/^nomad_rpc_job_list 1$/m);
      expect(text).not.toMatch(/identity=/);
    }
  });

  it("counts each route's calls by its own name, client RPCs and refused calls too, and no unknown path", async () => {
    const s = await startTestServer();
    running.push(s);
    const body = JSON.stringify({ NodeID: "00000000-0000-0000-0000-000000000001", Status: "ready" });
    for (const method of ["PUT", "POST"]) {
      const res = await s.call("/v1/rpc/Node.UpdateStatus", { method, body });
      expect(res.status).toBe(404);
    }
    expect((await s.call("/v1/node/x/allocations")).status).toBe(200);
    expect((await s.call("/v1/nodes", { method: "HEAD" })).status).toBe(200);
    expect((await s.call("/v1/no-such-route")).status).toBe(404);
    const text = await (await s.call("/v1/metrics?format=prometheus")).text();
    expect(text).toMatch(/^nomad_rpc_node_write 2$/m);
    expect(text).toMatch(/^nomad_rpc_node_list 2$/m);
    expect(text).not.toMatch(/no.such/);
  });
});
