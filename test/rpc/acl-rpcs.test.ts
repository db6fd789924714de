import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RpcClient } from "../../src/rpc/msgpack-rpc.ts";
import { RPC_TYPE } from "../../src/rpc/rpc-protocol.ts";
import { type AclServer, type AclToken, startAclServer } from "../acl/acl-fixtures.ts";

/** What a Nomad client agent with ACLs on asks over the RPC port to check the tokens presented to it. */
describe("a client's ACL lookups over the RPC port", () => {
  let acl: AclServer;
  let rpc: RpcClient;
  let reader: AclToken;

  beforeAll(async () => {
    acl = await startAclServer();
    await acl.policy("read-jobs", 'namespace "default" { policy = "read" }');
    await acl.policy("other", 'node { policy = "read" }');
    reader = await acl.token(["read-jobs"]);
    const addr = acl.s.rpcAddress;
    const socket = connect({
      host: addr.slice(0, addr.lastIndexOf(":")),
      port: Number(addr.slice(addr.lastIndexOf(":") + 1)),
    });
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write(Buffer.from([RPC_TYPE.nomad]));
    rpc = new RpcClient(socket);
  });

  afterAll(async () => {
    rpc?.close();
    await acl?.s.stop();
  });

  it("ACL.WhoAmI names the token behind a secret, without the caller's address bytes", async () => {
    const reply = (await rpc.call("ACL.WhoAmI", { AuthToken: reader.SecretID })) as {
      Identity: { ACLToken: { AccessorID: string; Policies: string[] }; RemoteIP?: unknown };
    };
    expect(reply.Identity.ACLToken.AccessorID).toBe(reader.AccessorID);
    expect(reply.Identity.ACLToken.Policies).toEqual(["read-jobs"]);
    expect(reply.Identity).not.toHaveProperty("RemoteIP");
    await expect(
      rpc.call("ACL.WhoAmI", { AuthToken: "00000000-0000-0000-0000-000000000000" }),
    ).rejects.toThrow("ACL token not found");
  });

  it("ACL.ResolveToken (Nomad 1.5 clients) answers the token, or none for an unknown secret", async () => {
    const known = (await rpc.call("ACL.ResolveToken", { SecretID: reader.SecretID })) as {
      Token: { AccessorID: string };
    };
    expect(known.Token.AccessorID).toBe(reader.AccessorID);
    const unknown = (await rpc.call("ACL.ResolveToken", {
      SecretID: "00000000-0000-0000-0000-000000000000",
    })) as { Token: unknown };
    expect(unknown.Token).toBeNull();
  });

  it("ACL.GetPolicies answers the token's own policies, as GET /v1/acl/policy/:name allows it", async () => {
    const own = (await rpc.call("ACL.GetPolicies", { Names: ["read-jobs"], AuthToken: reader.SecretID })) as {
      Policies: Record<string, { Name: string; Rules: string }>;
      Index: number;
    };
    expect(Object.keys(own.Policies)).toEqual(["read-jobs"]);
    expect(own.Policies["read-jobs"]!.Rules).toContain('policy = "read"');
    expect(own.Index).toBeGreaterThan(0);
    await expect(
      rpc.call("ACL.GetPolicies", { Names: ["other"], AuthToken: reader.SecretID }),
    ).rejects.toThrow("Permission denied");
    const all = (await rpc.call("ACL.GetPolicies", {
      Names: ["read-jobs", "other", "missing"],
      AuthToken: acl.root.SecretID,
    })) as { Policies: Record<string, unknown> };
    expect(Object.keys(all.Policies).sort()).toEqual(["other", "read-jobs"]);
  });

  it("ACL.GetRolesByID answers the roles linked to the token", async () => {
    const role = (await (
      await acl.write("/v1/acl/role", { Name: "readers", Policies: [{ Name: "read-jobs" }] })
    ).json()) as { ID: string };
    const member = await acl.token([], { Roles: [{ ID: role.ID }] });
    const reply = (await rpc.call("ACL.GetRolesByID", {
      ACLRoleIDs: [role.ID],
      AuthToken: member.SecretID,
    })) as {
      ACLRoles: Record<string, { Name: string }>;
    };
    expect(reply.ACLRoles[role.ID]!.Name).toBe("readers");
  });
});
