import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTE_RULES } from "../../src/acl/route-permissions.ts";
import { AT_INDEX_ROUTES, type AtIndexSupport, atIndexRefusal } from "../../src/api/at-index-routes.ts";
import { writeEvents } from "../../src/store/writer.ts";
import type { DeploymentSpec } from "../../streams/deployments.ts";
import { type AclServer, type AclToken, startAclServer } from "../acl/acl-fixtures.ts";
import { csiInfo } from "../projections/csi-fixtures.ts";
import { evaluation, upsertGroups } from "./eval-fixtures.ts";
import { placeAlloc, TestNode } from "./node-fixtures.ts";

/**
 * `?at_index=N` on every read route, generated from the route table (the
 * server refuses to start with a GET route missing from
 * src/api/at-index-routes.ts): a refused route answers 400 with its reason
 * and reads nothing; an honoured route answers at index 0 (before any
 * fixture existed) otherwise than now, and at the current index as now.
 */

const READ_ROUTES = (Object.entries(AT_INDEX_ROUTES) as [string, AtIndexSupport][]).map(([key, support]) => ({
  key,
  path: key.slice("GET ".length),
  support,
}));

interface Fixtures {
  readonly node: TestNode;
  readonly allocID: string;
  readonly evalID: string;
  readonly deploymentID: string;
  readonly scalingPolicyID: string;
  readonly victimToken: AclToken;
  readonly victimRoleID: string;
  readonly bindingRuleID: string;
}

let acl: AclServer;
let fixtures: Fixtures;

function paramValue(name: string, path: string): string {
  switch (name) {
    case "accessor":
      return fixtures.victimToken.AccessorID;
    case "profile":
      return "heap";
    case "name":
      if (path.startsWith("/v1/acl/role/name")) return "victim-role";
      if (path.startsWith("/v1/acl/")) return "victim";
      if (path.startsWith("/v1/node/pool")) return "matrix-pool";
      return "matrix-ns";
    default:
      if (path.startsWith("/v1/job/")) return "matrix";
      if (path.startsWith("/v1/allocation/") || path.startsWith("/v1/client/allocation/"))
        return fixtures.allocID;
      if (path.startsWith("/v1/node/")) return fixtures.node.id;
      if (path.startsWith("/v1/evaluation/")) return fixtures.evalID;
      if (path.startsWith("/v1/deployment")) return fixtures.deploymentID;
      if (path.startsWith("/v1/scaling/policy/")) return fixtures.scalingPolicyID;
      if (path.startsWith("/v1/acl/role/")) return fixtures.victimRoleID;
      if (path.startsWith("/v1/acl/binding-rule/")) return fixtures.bindingRuleID;
      if (path.startsWith("/v1/volume/csi/")) return "matrix";
      if (path.startsWith("/v1/plugin/csi/")) return "ebs";
      return randomUUID();
  }
}

/** Query parameters a route needs to answer at all. */
const QUERIES: Readonly<Record<string, string>> = {
  "/v1/job/:id/submission": "?version=0",
  "/v1/volumes": "?type=csi",
  "/v1/plugins": "?type=csi",
};

/** The fixture variable, which a trailing wildcard (`/v1/var/*`) names: two segments, "/" and all. */
const VARIABLE_PATH = "matrix/var";

function concrete(path: string): string {
  const url = path
    .replace(/:([A-Za-z]+)/g, (_, name: string) => encodeURIComponent(paramValue(name, path)))
    .replace(/\/\*$/, `/${VARIABLE_PATH}`);
  return url + (QUERIES[path] ?? "");
}

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly index: string | null;
  readonly atIndex: string | null;
}

async function read(url: string): Promise<Answer> {
  // Bounded: a route that ignored at_index and streamed would never end.
  const res = await acl.s.call(url, {
    headers: { "X-Nomad-Token": acl.root.SecretID },
    signal: AbortSignal.timeout(15_000),
  });
  return {
    status: res.status,
    text: await res.text(),
    index: res.headers.get("x-nomad-index"),
    atIndex: res.headers.get("x-chronomad-at-index"),
  };
}

const withAtIndex = (url: string, index: number) => `${url}${url.includes("?") ? "&" : "?"}at_index=${index}`;

describe("?at_index on every read route", () => {
  beforeAll(async () => {
    acl = await startAclServer();
    await acl.policy("victim", `namespace "victim" { policy = "read" }`);
    const victimToken = await acl.token(["victim"]);
    const role = (await (
      await acl.write("/v1/acl/role", { Name: "victim-role", Policies: [{ Name: "victim" }] })
    ).json()) as { ID: string };
    await acl.write("/v1/acl/auth-method", {
      Name: "victim",
      Type: "JWT",
      TokenLocality: "local",
      MaxTokenTTL: "1h",
      Config: { JWTValidationPubKeys: [], BoundAudiences: ["x"] },
    });
    const rule = (await (
      await acl.write(
        "/v1/acl/binding-rule",
        { AuthMethod: "victim", Selector: "", BindType: "policy", BindName: "victim" },
        "POST",
      )
    ).json()) as { ID: string };
    await acl.write("/v1/namespace/matrix-ns", {});
    await acl.write("/v1/node/pool/matrix-pool", { Name: "matrix-pool" });
    await acl.write("/v1/operator/scheduler/configuration", { SchedulerAlgorithm: "spread" });
    await acl.write(`/v1/var/${VARIABLE_PATH}`, { Items: { k: "v" } });
    await acl.write("/v1/jobs", {
      Job: {
        ID: "matrix",
        Name: "matrix",
        Type: "service",
        Datacenters: ["dc1"],
        TaskGroups: [
          {
            Name: "g",
            Count: 1,
            Scaling: { Max: 3 },
            Tasks: [{ Name: "t", Driver: "exec", Config: { command: "true" } }],
          },
        ],
      },
      Submission: { Source: 'job "matrix" {}', Format: "hcl2" },
    });
    const node = new TestNode(acl.s);
    // Running CSI plugin ebs, for the plugin and volume routes.
    const csi = {
      CSIControllerPlugins: { ebs: csiInfo("ebs", "controller") },
      CSINodePlugins: { ebs: csiInfo("ebs", "node") },
    };
    expect((await node.register(csi)).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    const alloc = await placeAlloc(acl.s, { NodeID: node.id, JobID: "matrix" });
    // A service registration, named as the matrix names `:name`, for the service routes.
    const service = {
      ID: `_nomad-task-${alloc.ID}-t-matrix-ns-http`,
      ServiceName: "matrix-ns",
      Namespace: "default",
      NodeID: node.id,
      Datacenter: "dc1",
      JobID: "matrix",
      AllocID: alloc.ID,
      Tags: ["matrix"],
      Address: "10.0.0.7",
      Port: 8080,
    };
    expect((await node.rpc("ServiceRegistration.Upsert", { Services: [service] })).status).toBe(200);
    const volume = {
      ID: "matrix",
      PluginID: "ebs",
      RequestedCapabilities: [{ AccessMode: "single-node-writer", AttachmentMode: "file-system" }],
    };
    const registered = await acl.s.call("/v1/volumes", {
      method: "PUT",
      headers: { "X-Nomad-Token": acl.root.SecretID },
      body: JSON.stringify({ Volumes: [volume] }),
    });
    expect(registered.status).toBe(200);
    const evalSpec = evaluation({ JobID: "matrix" });
    await upsertGroups(acl.s.store, [[evalSpec]]);
    const deploymentID = await writeDeployment();
    const policies = (await read("/v1/scaling/policies")).text;
    const [policy] = JSON.parse(policies) as { ID: string }[];
    expect(policy).toBeDefined();
    fixtures = {
      node,
      allocID: alloc.ID,
      evalID: evalSpec.ID,
      deploymentID,
      scalingPolicyID: policy!.ID,
      victimToken,
      victimRoleID: role.ID,
      bindingRuleID: rule.ID,
    };
  }, 120_000);

  afterAll(async () => {
    await acl?.s.stop();
  });

  it("declares every read route the server has, and only those", () => {
    const reads = Object.keys(ROUTE_RULES).filter((key) => key.startsWith("GET "));
    expect(new Set(Object.keys(AT_INDEX_ROUTES))).toEqual(new Set(reads));
    expect(READ_ROUTES.length).toBeGreaterThan(60);
  });

  it("refuses at_index with 400 and the reason where the answer is not state in the log", async () => {
    const problems: string[] = [];
    const index = acl.s.store.appliedIndex;
    for (const { key, path, support } of READ_ROUTES) {
      if (support.kind !== "refused") continue;
      const answer = await read(withAtIndex(concrete(path), index));
      const want = atIndexRefusal(path, support.why);
      if (answer.status !== 400 || answer.text !== want) {
        problems.push(`${key}: ${answer.status} ${answer.text.slice(0, 120)}`);
      }
      if (answer.atIndex !== null) problems.push(`${key}: says it answered at ${answer.atIndex}`);
    }
    expect(problems).toEqual([]);
    // The refusal is about the route, not the value: even a malformed one is refused the same way.
    const self = await read("/v1/agent/self?at_index=soon");
    expect(self.status).toBe(400);
    expect(self.text).toMatch(/^at_index is not supported by \/v1\/agent\/self: /);
    // The event stream's own refusal (src/api/plugins/events.ts) says the same.
    expect((await read("/v1/event/stream?at_index=1")).text).toBe(
      "at_index is not supported by /v1/event/stream: the stream starts after `index` (frames with a greater Index)",
    );
  });

  it("answers every honoured route at index 0 as the empty past, not as now", async () => {
    const problems: string[] = [];
    for (const { key, path, support } of READ_ROUTES) {
      if (support.kind !== "honoured") continue;
      const url = concrete(path);
      const past = await read(withAtIndex(url, 0));
      const now = await read(url);
      if (past.atIndex !== "0") problems.push(`${key}: X-Chronomad-At-Index ${past.atIndex}`);
      if (past.status >= 500 || now.status >= 500) problems.push(`${key}: ${past.status}/${now.status}`);
      if (now.status !== 200)
        problems.push(`${key}: the fixtures do not reach it now (${now.status} ${now.text})`);
      if (past.status === now.status && past.text === now.text && past.index === now.index) {
        problems.push(`${key}: the same answer at index 0 as now`);
      }
    }
    expect(problems).toEqual([]);
  }, 120_000);

  it("answers every honoured route at the current index as now", async () => {
    const problems: string[] = [];
    for (const { key, path, support } of READ_ROUTES) {
      if (support.kind !== "honoured") continue;
      const url = concrete(path);
      // The leader's services may write meanwhile: compare only answers read around the same index.
      let same = false;
      let last = "";
      for (let attempt = 0; attempt < 5 && !same; attempt++) {
        const index = acl.s.store.appliedIndex;
        const past = await read(withAtIndex(url, index));
        const now = await read(url);
        if (acl.s.store.appliedIndex !== index) continue;
        same = past.status === now.status && past.text === now.text && past.index === now.index;
        last = `${past.status} ${past.index} vs ${now.status} ${now.index}`;
      }
      if (!same) problems.push(`${key}: differs from now at the current index (${last})`);
    }
    expect(problems).toEqual([]);
  }, 120_000);

  it("leaves the 404 of an unknown path and the 405 of a wrong method alone", async () => {
    const unknown = await read("/v1/no-such-route?at_index=0");
    expect(unknown.status).toBe(404);
    expect(unknown.text).toBe("chronomad does not serve GET /v1/no-such-route");
    const wrongMethod = await read("/v1/acl/token?at_index=0");
    expect(wrongMethod.status).toBe(405);
  });
});

/** A deployment of the matrix job, as a plan result carries one. */
async function writeDeployment(): Promise<string> {
  const now = Date.now() * 1e6;
  const deployment: DeploymentSpec = {
    ID: randomUUID(),
    Namespace: "default",
    JobID: "matrix",
    JobVersion: 0,
    JobModifyIndex: 1,
    JobSpecModifyIndex: 1,
    JobCreateIndex: 1,
    IsMultiregion: false,
    TaskGroups: {},
    Status: "running",
    StatusDescription: "Deployment is running",
    EvalPriority: 50,
    CreateTime: now,
    ModifyTime: now,
  };
  const { outcomes } = await writeEvents(acl.s.store, Date.now(), { kind: "server", id: "test" }, [
    {
      type: "AllocsPlanApplied",
      v: 1,
      data: { EvalID: "", Placed: [], Updated: [], Stopped: [], Preempted: [], Deployment: deployment },
    },
  ]);
  expect(outcomes[0]?.status).toBe("applied");
  return deployment.ID;
}
