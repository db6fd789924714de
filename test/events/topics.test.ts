import { describe, expect, it } from "vitest";
import { eventOf } from "../../src/events/frames.ts";
import { EVENT_TYPES, TOPIC_NAMES } from "../../src/events/topics.ts";
import type { Change } from "../../src/store/projection.ts";
import { allSchemas } from "../../streams/index.ts";

/** Every event Type Nomad defines (nomad/structs/event.go), and chronomad's own Namespace and Variable types. */
const NOMAD_TYPES = new Set([
  "NodeRegistration",
  "NodeDeregistration",
  "NodeEligibility",
  "NodeDrain",
  "NodeStreamEvent",
  "NodePoolUpserted",
  "NodePoolDeleted",
  "DeploymentStatusUpdate",
  "DeploymentPromotion",
  "DeploymentAllocHealth",
  "AllocationCreated",
  "AllocationUpdated",
  "AllocationUpdateDesiredStatus",
  "EvaluationUpdated",
  "JobRegistered",
  "JobDeregistered",
  "JobBatchDeregistered",
  "PlanResult",
  "ACLTokenDeleted",
  "ACLTokenUpserted",
  "ACLPolicyDeleted",
  "ACLPolicyUpserted",
  "ACLRoleDeleted",
  "ACLRoleUpserted",
  "ACLAuthMethodUpserted",
  "ACLAuthMethodDeleted",
  "ACLBindingRuleUpserted",
  "ACLBindingRuleDeleted",
  "ServiceRegistration",
  "ServiceDeregistration",
  // Nomad's names for the CSI volume Raft messages (nomad/state/events.go, after 1.6).
  "CSIVolumeRegistered",
  "CSIVolumeDeregistered",
  "CSIVolumeClaim",
  // Not in 1.6, nor 1.7 to 1.10: Nomad 2.0 added the Variable topic (#27637)
  // and types every variable write, a delete included, VariableUpdated.
  "VariableUpdated",
]);
const CHRONOMAD_TYPES = new Set([
  "NamespaceUpserted",
  "NamespaceDeleted",
  // Nomad 2.0 says a delete with VariableUpdated and Deleted: true in its
  // payload; chronomad's payload has no Deleted, so its Type says it.
  "VariableDeleted",
]);

const change = (fields: Partial<Change>): Change => {
  const event = fields.event ?? "JobRegistered";
  return {
    table: "jobs",
    key: "k",
    before: undefined,
    after: { ID: "web", Namespace: "default" },
    index: 9,
    event,
    at: 0,
    envelope: { type: event, v: 1, at: 0, data: {} },
    ...fields,
  };
};

describe("event types", () => {
  it("give every record type of the log a Nomad type, or none", () => {
    for (const { type } of allSchemas) {
      expect(Object.hasOwn(EVENT_TYPES, type), `${type} has no entry in EVENT_TYPES`).toBe(true);
      const mapped = EVENT_TYPES[type];
      if (mapped !== null) {
        expect(NOMAD_TYPES.has(mapped!) || CHRONOMAD_TYPES.has(mapped!), `${type} -> ${mapped}`).toBe(true);
      }
    }
  });

  it("map chronomad's own records onto Nomad's types", () => {
    const alloc = { ID: "a", Namespace: "default", JobID: "web", DeploymentID: "" };
    expect(eventOf(change({ table: "allocs", after: alloc, event: "AllocsLost" }))?.Type).toBe("PlanResult");
    expect(eventOf(change({ table: "allocs", after: alloc, event: "AllocsDisconnected" }))?.Type).toBe(
      "PlanResult",
    );
    expect(eventOf(change({ table: "allocs", after: alloc, event: "AllocsReconnected" }))?.Type).toBe(
      "AllocationUpdated",
    );
    expect(
      eventOf(change({ table: "nodes", after: { ID: "n" }, event: "NodeEligibilityUpdated" }))?.Type,
    ).toBe("NodeEligibility");
    expect(
      eventOf(change({ table: "namespaces", after: { Name: "default" }, event: "ClusterBootstrapped" })),
    ).toMatchObject({ Topic: "Namespace", Type: "NamespaceUpserted" });
  });

  it("publish no Node event for the node stamp a client's allocation update leaves (Nomad's Node.UpdateAlloc publishes none)", () => {
    for (const event of ["AllocClientUpdated", "AllocsReconnected"]) {
      expect(eventOf(change({ table: "nodes", after: { ID: "n" }, event })), event).toBeUndefined();
    }
    const alloc = { ID: "a", Namespace: "default", JobID: "web", DeploymentID: "" };
    expect(eventOf(change({ table: "allocs", after: alloc, event: "AllocClientUpdated" }))?.Type).toBe(
      "AllocationUpdated",
    );
  });

  it("publish no update for writes Nomad publishes nothing for (eval deletes and reaps)", () => {
    for (const event of ["EvaluationsDeleted", "EvaluationsDeletedByFilter", "GarbageCollected"]) {
      // A job whose status moved because its evaluations went.
      expect(eventOf(change({ event, before: { ID: "web", Status: "pending" } })), event).toBeUndefined();
    }
  });

  it("publish every delete, with Nomad's type where Nomad has one and the record that removed it", () => {
    const removed = (table: string, before: Record<string, unknown>, event: string) =>
      eventOf(change({ table, before, after: undefined, event }));
    expect(removed("jobs", { ID: "web", Namespace: "default" }, "GarbageCollected")).toMatchObject({
      Topic: "Job",
      Type: "JobDeregistered",
      Key: "web",
      Op: "delete",
      Record: "GarbageCollected",
      Payload: { Job: { ID: "web" } },
    });
    const alloc = { ID: "a", Namespace: "default", JobID: "web", DeploymentID: "" };
    expect(removed("allocs", alloc, "GarbageCollected")).toMatchObject({
      Topic: "Allocation",
      Type: "AllocationDeleted",
      FilterKeys: ["web"],
      Op: "delete",
    });
    expect(
      removed("evals", { ID: "e", Namespace: "default", JobID: "web" }, "EvaluationsDeletedByFilter"),
    ).toMatchObject({ Topic: "Evaluation", Type: "EvaluationDeleted", Record: "EvaluationsDeletedByFilter" });
    expect(removed("nodes", { ID: "n" }, "NodeDeregistered")?.Type).toBe("NodeDeregistration");
  });

  it("publish ACL objects on Nomad's ACL topics without a secret or its hash", () => {
    const token = { AccessorID: "acc", SecretIDHash: "h", Name: "ops" };
    expect(eventOf(change({ table: "acl_tokens", after: token, event: "ACLTokensUpserted" }))).toMatchObject({
      Topic: "ACLToken",
      Type: "ACLTokenUpserted",
      Key: "acc",
      Payload: { ACLToken: { AccessorID: "acc", SecretID: "", Name: "ops" } },
    });
    const e = eventOf(change({ table: "acl_tokens", after: token, event: "ACLTokensUpserted" }));
    expect(JSON.stringify(e)).not.toContain('"h"');
    const method = { Name: "sso", OIDCClientSecretSealed: { c: "x" } };
    expect(
      eventOf(change({ table: "acl_auth_methods", after: method, event: "ACLAuthMethodsUpserted" }))?.Payload,
    ).toEqual({ ACLAuthMethod: { Name: "sso" } });
  });

  it("send Node payloads with an empty SecretID, never a secret or its hash", () => {
    const e = eventOf(
      change({ table: "nodes", after: { ID: "n", SecretIDHash: "h" }, event: "NodeRegistered" }),
    );
    expect(e?.Payload).toEqual({ Node: { ID: "n", SecretID: "", Drain: false } });
  });

  it("publish node pool changes on Nomad's NodePool topic, keyed by name", () => {
    for (const event of ["NodePoolUpserted", "ClusterBootstrapped"]) {
      expect(eventOf(change({ table: "node_pools", after: { Name: "gpu" }, event }))).toMatchObject({
        Topic: "NodePool",
        Key: "gpu",
        Type: "NodePoolUpserted",
        Payload: { NodePool: { Name: "gpu" } },
      });
    }
    const deleted = eventOf(
      change({ table: "node_pools", before: { Name: "gpu" }, after: undefined, event: "NodePoolDeleted" }),
    );
    expect(deleted).toMatchObject({ Topic: "NodePool", Type: "NodePoolDeleted" });
  });

  it("publish variable writes on the Variable topic with their metadata, never the sealed Data", () => {
    const row = { Namespace: "default", Path: "matrix/var", Data: "c2VhbGVk", KeyID: "k1", ModifyIndex: 9 };
    const written = eventOf(change({ table: "variables", after: row, event: "VariableApplied" }));
    expect(written).toMatchObject({
      Topic: "Variable",
      Type: "VariableUpdated",
      Key: "matrix/var",
      Namespace: "default",
      Payload: { Metadata: { Path: "matrix/var", KeyID: "k1" } },
    });
    expect(JSON.stringify(written)).not.toContain("c2VhbGVk");
    const deleted = eventOf(
      change({ table: "variables", before: row, after: undefined, event: "VariableApplied" }),
    );
    expect(deleted).toMatchObject({ Topic: "Variable", Type: "VariableDeleted", Op: "delete" });
    expect(JSON.stringify(deleted)).not.toContain("c2VhbGVk");
  });

  it("send Node payloads with the api package's Drain flag, set while a drain strategy is", () => {
    const e = eventOf(
      change({
        table: "nodes",
        after: { ID: "n", DrainStrategy: { DrainSpec: {} } },
        event: "NodeDrainUpdated",
      }),
    );
    expect(e?.Payload).toMatchObject({ Node: { Drain: true } });
  });
});

describe("topic names", () => {
  it("include Nomad's topics that chronomad has no events for yet", () => {
    for (const t of [
      "Service",
      "NodePool",
      "ACLToken",
      "ACLPolicy",
      "ACLRole",
      "ACLAuthMethod",
      "ACLBindingRule",
    ]) {
      expect(TOPIC_NAMES.has(t), t).toBe(true);
    }
  });
});
