import { beforeAll, describe, expect, it } from "vitest";
import { type ACLPolicyRow, policyJobKey } from "../../projections/acl.ts";
import type { AllocRow } from "../../projections/allocs.ts";
import type { NodeRow, NodeSecretRow } from "../../projections/nodes.ts";
import { parsePolicy } from "../../src/acl/policy/parse-policy.ts";
import {
  AclAuthenticator,
  isWorkloadIdentity,
  type WorkloadIdentity,
} from "../../src/auth/acl-authenticator.ts";
import type { AuthenticatedIdentity } from "../../src/auth/authenticate.ts";
import { identityClaims, issuedAtOf } from "../../src/identity/claims.ts";
import { signIdentity } from "../../src/identity/jwt.ts";
import type { RootKeyMaterial } from "../../src/keyring/root-key-material.ts";
import { Table } from "../../src/store/table.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import {
  type VariableCapability,
  allowsVariable as variableCheck,
} from "../../src/variables/variable-access.ts";
import type { JobACLSpec } from "../../streams/acl.ts";
import { IdentityWorld, NOW_MS } from "./identity-fixtures.ts";

/** Nomad's variables authorize for reads and lists (a workload's claim counts), with ACLs on. */
const allowsVariable = (identity: AuthenticatedIdentity, ns: string, path: string, cap: string) =>
  variableCheck(true, identity, ns, path, cap as VariableCapability, true);

describe("a workload identity presented as a token (ACLs on)", () => {
  const world = new IdentityWorld();
  const aclPolicies = new Table<ACLPolicyRow>({
    name: "acl_policies",
    key: (p) => p.Name,
    indexes: { job: (p) => (p.JobACL ? policyJobKey(p.JobACL.Namespace, p.JobACL.JobID) : undefined) },
  });
  const authenticator = new AclAuthenticator(
    {
      aclTokens: new Table({
        name: "acl_tokens",
        key: (t) => t.AccessorID,
        indexes: { secret: (t) => t.SecretIDHash },
      }),
      aclPolicies,
      aclRoles: new Table({ name: "acl_roles", key: (r) => r.ID }),
      nodes: new Table<NodeRow>({ name: "nodes", key: (n) => n.ID }),
      nodeSecrets: new Table<NodeSecretRow>({
        name: "node_secrets",
        key: (n) => n.ID,
        indexes: { hash: (n) => n.SecretIDHash },
      }),
      allocs: world.allocs,
      rootKeys: world.rootKeys,
    },
    new VirtualClock(NOW_MS),
  );
  let key: RootKeyMaterial;
  let index = 100;
  const attach = async (name: string, rules: string, jobAcl: Partial<JobACLSpec>) => {
    const JobACL = { Namespace: "default", JobID: "web", Group: "", Task: "", ...jobAcl };
    aclPolicies.put(
      {
        Name: name,
        Description: "",
        Rules: rules,
        Parsed: await parsePolicy(rules),
        JobACL,
        Hash: name,
        CreateIndex: index,
        ModifyIndex: index,
      },
      index++,
    );
  };
  const jwtOf = (alloc: AllocRow, task: string) =>
    signIdentity(key.keyId, key.signingKey, identityClaims(alloc, alloc.Job, task, issuedAtOf(alloc)));
  const resolve = (alloc: AllocRow, task: string) => {
    const identity = authenticator.resolve(jwtOf(alloc, task), { addr: "10.0.0.9" });
    if (!isWorkloadIdentity(identity)) throw new Error(`refused: ${identity.failure}`);
    return identity as WorkloadIdentity;
  };

  beforeAll(async () => {
    key = await world.addKey();
    await attach("whole-job", `namespace "default" { policy = "read" }`, {});
    await attach("group", `node { policy = "read" }`, { Group: "frontend" });
    await attach("other-group", `agent { policy = "read" }`, { Group: "backend" });
    await attach("task", `operator { policy = "read" }`, { Task: "server", Group: "frontend" });
    await attach("other-job", `quota { policy = "read" }`, { JobID: "db" });
    await attach("prefix-of-job", `plugin { policy = "read" }`, { JobID: "we" });
    const deny = `namespace "default" {
  variables {
    path "nomad/jobs/web/frontend" {
      capabilities = ["deny"]
    }
  }
}`;
    await attach("var-deny", deny, {
      Group: "frontend",
      Task: "sidecar",
    });
  });

  it("is the workload: its actor, its metrics label, its claims", () => {
    const alloc = world.addAlloc();
    const identity = resolve(alloc, "server");
    expect(identity.actor).toEqual({ kind: "workload", id: `${alloc.ID}:server`, addr: "10.0.0.9" });
    expect(identity.label).toBe(`alloc:${alloc.ID}`);
    expect(identity.failure).toBeUndefined();
    expect(identity.claims.nomad_allocation_id).toBe(alloc.ID);
    expect(identity.variableClaim).toEqual({
      Namespace: "default",
      Job: "web",
      Group: "frontend",
      Task: "server",
    });
  });

  it("gets the policies attached to its job, its group and its task, and no others", () => {
    const alloc = world.addAlloc();
    const server = resolve(alloc, "server");
    expect(server.allows("default", "read-job")).toBe(true); // whole job
    expect(server.allows("default", "submit-job")).toBe(false);
    expect(server.allows("", "node:read")).toBe(true); // its group
    expect(server.allows("", "agent:read")).toBe(false); // another group
    expect(server.allows("", "operator:read")).toBe(true); // its task
    expect(server.allows("", "quota:read")).toBe(false); // another job
    expect(server.allows("", "plugin:read")).toBe(false); // a job whose ID is a prefix of its own
    expect(server.allows("*", "management")).toBe(false);
    const sidecar = resolve(alloc, "sidecar");
    expect(sidecar.allows("", "node:read")).toBe(true);
    expect(sidecar.allows("", "operator:read")).toBe(false); // another task's
  });

  it("of a dispatch or periodic child gets the parent job's policies and variables", () => {
    const child = world.addAlloc(
      { JobID: "web/dispatch-1-abc" },
      { ID: "web/dispatch-1-abc", ParentID: "web" },
    );
    const identity = resolve(child, "server");
    expect(identity.claims.nomad_job_id).toBe("web");
    expect(identity.allows("default", "read-job")).toBe(true);
    expect(allowsVariable(identity, "default", "nomad/jobs/web", "read")).toBe(true);
  });

  it("with no policy attached allows nothing but its own variables (CVE-2023-1299)", () => {
    const lone = world.addAlloc({ JobID: "lone" }, { ID: "lone" });
    const identity = resolve(lone, "server");
    expect(identity.allows("default", "read-job")).toBe(false);
    expect(identity.allows("default", "list-jobs")).toBe(false);
    expect(allowsVariable(identity, "default", "nomad/jobs/lone/frontend/server", "read")).toBe(true);
  });

  it("reads and lists its own variables paths, writes none of them, reads no other job's", () => {
    const identity = resolve(world.addAlloc(), "server");
    for (const path of [
      "nomad/jobs",
      "nomad/jobs/web",
      "nomad/jobs/web/frontend",
      "nomad/jobs/web/frontend/server",
    ]) {
      expect(allowsVariable(identity, "default", path, "read"), path).toBe(true);
      expect(allowsVariable(identity, "default", path, "list"), path).toBe(true);
      expect(allowsVariable(identity, "default", path, "write"), path).toBe(false);
    }
    expect(allowsVariable(identity, "default", "nomad/jobs/web/frontend/sidecar", "read")).toBe(false);
    expect(allowsVariable(identity, "default", "nomad/jobs/db", "read")).toBe(false);
    expect(allowsVariable(identity, "default", "nomad/jobs/web/x", "read")).toBe(false);
    expect(allowsVariable(identity, "other", "nomad/jobs/web", "read")).toBe(false);
    expect(identity.allows("default", "variables:list")).toBe(true);
    expect(identity.allows("other", "variables:list")).toBe(false);
  });

  it("loses an implicit path that an attached policy denies exactly (CVE-2023-1296)", () => {
    const sidecar = resolve(world.addAlloc(), "sidecar");
    expect(allowsVariable(sidecar, "default", "nomad/jobs/web/frontend", "read")).toBe(false);
    expect(allowsVariable(sidecar, "default", "nomad/jobs/web", "read")).toBe(true);
  });

  it("is refused, with Nomad's reason, once its allocation is client-terminal", () => {
    const alloc = world.addAlloc();
    const jwt = jwtOf(alloc, "server");
    world.update(alloc, { DesiredStatus: "stop", ClientStatus: "complete" });
    const identity = authenticator.resolve(jwt);
    expect(isWorkloadIdentity(identity)).toBe(false);
    expect(identity.failure).toBe("allocation is terminal");
    expect(identity.allows("default", "read-job")).toBe(false);
    expect(allowsVariable(identity, "default", "nomad/jobs/web", "read")).toBe(false);
  });

  it("a secret that is neither a UUID nor a JWT is still 'ACL token is invalid'", () => {
    expect(authenticator.resolve("not-a-token").failure).toBe("ACL token is invalid");
    expect(authenticator.resolve("a.b.c").failure).toBe("failed to verify token: token is malformed");
  });
});
