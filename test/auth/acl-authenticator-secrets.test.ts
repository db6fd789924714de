import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { ACLPolicyRow, ACLRoleRow, ACLTokenRow } from "../../projections/acl.ts";
import type { NodeRow, NodeSecretRow } from "../../projections/nodes.ts";
import {
  AclAuthenticator,
  isTokenIdentity,
  TOKEN_EXPIRED,
  TOKEN_NOT_FOUND,
} from "../../src/auth/acl-authenticator.ts";
import type { AuthenticatedIdentity } from "../../src/auth/authenticate.ts";
import { Table } from "../../src/store/table.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import { hashSecret } from "../../src/util/secret-hash.ts";

const NOW = Date.parse("2026-11-29T10:00:00Z");

/** The tables the authenticator reads, as the projections define them (their keys and indexes). */
function world() {
  const aclTokens = new Table<ACLTokenRow>({
    name: "acl_tokens",
    key: (t) => t.AccessorID,
    indexes: { secret: (t) => t.SecretIDHash },
  });
  const nodes = new Table<NodeRow>({ name: "nodes", key: (n) => n.ID });
  const nodeSecrets = new Table<NodeSecretRow>({
    name: "node_secrets",
    key: (n) => n.ID,
    indexes: { hash: (n) => n.SecretIDHash },
  });
  const authenticator = new AclAuthenticator(
    {
      aclTokens,
      aclPolicies: new Table<ACLPolicyRow>({ name: "acl_policies", key: (p) => p.Name }),
      aclRoles: new Table<ACLRoleRow>({ name: "acl_roles", key: (r) => r.ID }),
      nodes,
      nodeSecrets,
    },
    new VirtualClock(NOW),
  );
  let index = 1;
  return {
    authenticator,
    /** Node.Register as the projection files it: the node row and the row of its secret's hash. */
    register(id: string, secret: string) {
      const at = index++;
      // The authenticator reads a node's ID and Name only.
      nodes.put({ ID: id, Name: `client-${id.slice(0, 8)}` } as unknown as NodeRow, at);
      nodeSecrets.put({ ID: id, SecretIDHash: hashSecret(secret), CreateIndex: at, ModifyIndex: at }, at);
    },
    deregister(id: string) {
      const at = index++;
      nodes.delete(id, at);
      nodeSecrets.delete(id, at);
    },
    token(secret: string, expires: string | null = null): ACLTokenRow {
      const at = index++;
      const row: ACLTokenRow = {
        AccessorID: randomUUID(),
        SecretIDHash: hashSecret(secret),
        Name: "same secret",
        Type: "management",
        Policies: [],
        Roles: [],
        Global: true,
        Hash: "",
        CreateTime: new Date(NOW).toISOString(),
        ExpirationTime: expires,
        ExpirationTTL: 0,
        CreateIndex: at,
        ModifyIndex: at,
      };
      aclTokens.put(row, at);
      return row;
    },
    revoke(token: ACLTokenRow) {
      aclTokens.delete(token.AccessorID, index++);
    },
  };
}

const nodeOf = (identity: AuthenticatedIdentity) =>
  identity.actor.kind === "node" ? identity.actor.id : `not a node: ${identity.failure ?? identity.label}`;

describe("AclAuthenticator with node secrets", () => {
  it("resolves a node's secret to that node on every call, and nothing else to it", () => {
    const w = world();
    const id = randomUUID();
    const secret = randomUUID();
    w.register(id, secret);
    for (let i = 0; i < 3; i++) expect(nodeOf(w.authenticator.resolve(secret))).toBe(id);
    expect(w.authenticator.resolve(randomUUID()).failure).toBe(TOKEN_NOT_FOUND);
    const oneOff = `${secret.slice(0, -1)}${secret.endsWith("0") ? "1" : "0"}`;
    expect(w.authenticator.resolve(oneOff).failure).toBe(TOKEN_NOT_FOUND);
    expect(w.authenticator.resolve(secret.toUpperCase()).failure).toBe(TOKEN_NOT_FOUND);
  });

  it("refuses a secret proven before once the node is removed, or registered with another secret", () => {
    const w = world();
    const id = randomUUID();
    const first = randomUUID();
    w.register(id, first);
    expect(nodeOf(w.authenticator.resolve(first))).toBe(id);
    const second = randomUUID();
    w.register(id, second);
    expect(w.authenticator.resolve(first).failure).toBe(TOKEN_NOT_FOUND);
    expect(nodeOf(w.authenticator.resolve(second))).toBe(id);
    expect(nodeOf(w.authenticator.resolve(second))).toBe(id);
    w.deregister(id);
    expect(w.authenticator.resolve(second).failure).toBe(TOKEN_NOT_FOUND);
    expect(w.authenticator.resolve(first).failure).toBe(TOKEN_NOT_FOUND);
    // Registered again with its first secret: that node once more.
    w.register(id, first);
    expect(nodeOf(w.authenticator.resolve(first))).toBe(id);
    expect(w.authenticator.resolve(second).failure).toBe(TOKEN_NOT_FOUND);
  });

  it("resolves a token whose secret is also a node's as the token, before and after the node proved it", () => {
    const w = world();
    const id = randomUUID();
    const secret = randomUUID();
    w.register(id, secret);
    expect(nodeOf(w.authenticator.resolve(secret))).toBe(id);

    const token = w.token(secret);
    for (let i = 0; i < 2; i++) {
      const identity = w.authenticator.resolve(secret);
      expect(isTokenIdentity(identity) && identity.token).toBe(token);
    }
    // The token gone: the node's secret again.
    w.revoke(token);
    expect(nodeOf(w.authenticator.resolve(secret))).toBe(id);

    // An expired token still wins over the node, as a refusal.
    const expired = w.token(secret, new Date(NOW - 1_000).toISOString());
    expect(w.authenticator.resolve(secret).failure).toBe(TOKEN_EXPIRED);
    w.revoke(expired);
    expect(nodeOf(w.authenticator.resolve(secret))).toBe(id);
  });

  it("resolves a token's secret as the token every time, a node registered with it later too", () => {
    const w = world();
    const nodeSecret = randomUUID();
    w.register(randomUUID(), nodeSecret);
    expect(w.authenticator.resolve(nodeSecret).actor.kind).toBe("node");
    const secret = randomUUID();
    const token = w.token(secret);
    for (let i = 0; i < 3; i++) {
      const identity = w.authenticator.resolve(secret, { addr: "10.0.0.9" });
      expect(isTokenIdentity(identity) && identity.token).toBe(token);
      expect(identity.actor).toEqual({
        kind: "token",
        id: token.AccessorID,
        name: token.Name,
        addr: "10.0.0.9",
      });
    }
    // A node registered later with the token's secret does not take it over.
    const late = randomUUID();
    w.register(late, secret);
    for (let i = 0; i < 2; i++) {
      const identity = w.authenticator.resolve(secret);
      expect(isTokenIdentity(identity) && identity.token).toBe(token);
    }
    w.revoke(token);
    expect(nodeOf(w.authenticator.resolve(secret))).toBe(late);
    w.deregister(late);
    expect(w.authenticator.resolve(secret).failure).toBe(TOKEN_NOT_FOUND);
  });
});
