import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { type AclServer, type AclToken, startAclServer } from "../acl/acl-fixtures.ts";
import { TestNode } from "../api/node-fixtures.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

async function aclServer(): Promise<AclServer> {
  const acl = await startAclServer();
  running.push(acl.s);
  return acl;
}

interface WhoAmI {
  readonly Identity: { readonly ACLToken: { readonly AccessorID: string } | null; readonly ClientID: string };
}

/** Who the server's ACL authenticator takes `secret` for: a node's ID, a token's accessor, or the refusal. */
async function whoIs(s: TestServer, secret: string): Promise<string> {
  const res = await s.call("/v1/acl/whoami", { headers: { "X-Nomad-Token": secret } });
  if (res.status !== 200) return `${res.status} ${await res.text()}`;
  const { Identity } = (await res.json()) as WhoAmI;
  return Identity.ACLToken ? `token ${Identity.ACLToken.AccessorID}` : `node ${Identity.ClientID}`;
}

const refused = "403 ACL token not found";

describe("node secrets with ACLs on", () => {
  it("accepts a node's secret call after call, and refuses it once the node is deregistered", async () => {
    const acl = await aclServer();
    const node = new TestNode(acl.s);
    expect((await node.register()).status).toBe(200);
    for (let i = 0; i < 3; i++) {
      expect(await whoIs(acl.s, node.secret)).toBe(`node ${node.id}`);
      expect((await node.heartbeat()).status).toBe(200);
    }
    expect((await node.rpc("Node.Deregister", { NodeID: node.id })).status).toBe(200);
    expect(await whoIs(acl.s, node.secret)).toBe(refused);
    expect(await whoIs(acl.s, node.secret)).toBe(refused);
    expect((await node.heartbeat()).status).toBe(404);
  });

  it("refuses the old secret of a node registered again with another one, and accepts the new one", async () => {
    const acl = await aclServer();
    const node = new TestNode(acl.s);
    expect((await node.register()).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    expect(await whoIs(acl.s, node.secret)).toBe(`node ${node.id}`);
    expect((await node.rpc("Node.Deregister", { NodeID: node.id })).status).toBe(200);

    const again = new TestNode(acl.s, { id: node.id, secret: randomUUID() });
    expect((await again.register()).status).toBe(200);
    for (let i = 0; i < 2; i++) {
      expect(await whoIs(acl.s, node.secret)).toBe(refused);
      expect((await node.heartbeat()).status).toBe(403);
      expect(await whoIs(acl.s, again.secret)).toBe(`node ${node.id}`);
      expect((await again.heartbeat()).status).toBe(200);
    }
  });

  it("still resolves a token as the token, next to nodes calling with their secrets", async () => {
    const acl = await aclServer();
    const node = new TestNode(acl.s);
    expect((await node.register()).status).toBe(200);
    expect(await whoIs(acl.s, node.secret)).toBe(`node ${node.id}`);
    for (let i = 0; i < 2; i++) {
      expect(await whoIs(acl.s, acl.root.SecretID)).toBe(`token ${acl.root.AccessorID}`);
      expect(await whoIs(acl.s, node.secret)).toBe(`node ${node.id}`);
    }
  });

  it("takes a secret that is both a token's and a node's for the token, even after the node proved it", async () => {
    // Bootstrapped after the node registered, with the node's secret as the bootstrap secret.
    const s = await startTestServer({ args: ["--acl-enabled"] });
    running.push(s);
    const node = new TestNode(s);
    expect((await node.register()).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    expect(await whoIs(s, node.secret)).toBe(`node ${node.id}`);

    const boot = await s.call("/v1/acl/bootstrap", {
      method: "POST",
      body: JSON.stringify({ BootstrapSecret: node.secret }),
    });
    expect(boot.status).toBe(200);
    const root = (await boot.json()) as AclToken;
    for (let i = 0; i < 2; i++) {
      expect(await whoIs(s, node.secret)).toBe(`token ${root.AccessorID}`);
      // The client RPC still checks the node's own secret, which it is.
      expect((await node.heartbeat()).status).toBe(200);
    }
  });
});
