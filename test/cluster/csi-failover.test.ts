import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { TestNode } from "../api/node-fixtures.ts";
import { ackDetaches, ebsFingerprint, ebsVolume, pendingDetaches } from "../csi/csi-fleet.ts";
import { Cluster, type Member, useClusterTopics } from "./cluster-fixture.ts";
import { eventually } from "./eventually.ts";

const brokers = process.env.KAFKA_BROKERS;

interface VolumeView {
  WriteAllocs: Record<string, unknown>;
  PastClaims: Record<string, { State: number }>;
  ModifyIndex: number;
}

interface HistoryEntry {
  Index: number;
  Field: string;
  From: { State?: string; Kind?: string } | null;
  To: { State?: string; Kind?: string } | null;
}

/** A service job whose one allocation writes the single-node-writer volume `data`. */
function writerJob(id: string) {
  return {
    ID: id,
    Type: "service",
    TaskGroups: [
      {
        Name: "g",
        Count: 1,
        Volumes: {
          data: {
            Name: "data",
            Type: "csi",
            Source: "data",
            AccessMode: "single-node-writer",
            AttachmentMode: "file-system",
          },
        },
        Tasks: [
          {
            Name: "t",
            Driver: "docker",
            Resources: { CPU: 100, MemoryMB: 64 },
            VolumeMounts: [{ Volume: "data", Destination: "/srv" }],
          },
        ],
      },
    ],
  };
}

async function send(member: Member, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(member.url + path, {
    method,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const text = await res.text();
  expect(res.status, `${member.name} ${method} ${path}: ${text}`).toBe(200);
  return text === "" ? {} : JSON.parse(text);
}

const claimFields = { AccessMode: "single-node-writer", AttachmentMode: "file-system" };

if (!brokers) {
  console.warn("CSI failover test skipped: KAFKA_BROKERS is not set (bash .ci/run starts a broker)");
  describe.skip("CSI claim release across a leader failover — skipped: KAFKA_BROKERS is not set (bash .ci/run starts a broker)", () => {
    it("needs a real broker", () => undefined);
  });
} else {
  const topics = useClusterTopics(brokers);

  describe("CSI claim release across a leader failover on Kafka", () => {
    it("frees a claim whose release the old leader left half done: the new leader's watcher reaps it at start", async () => {
      const topic = `chronomad-csi-failover-${randomUUID()}`;
      topics.push(topic);
      const cluster = await Cluster.start(`kafka://${brokers}/${topic}`, ["s1", "s2"]);
      try {
        const first = await cluster.agreedLeader();
        const second = cluster.alive().find((m) => m !== first)!;
        // Two clients, both running plugin `ebs`'s node plugin, the first its controller too.
        const nodes: TestNode[] = [cluster.client(first), cluster.client(first)];
        for (const [i, node] of nodes.entries()) {
          const drivers = { Drivers: { docker: { Detected: true, Healthy: true } } };
          const reg = await node.register({ ...ebsFingerprint(i === 0), ...drivers });
          expect(reg.status, reg.text).toBe(200);
          expect((await node.heartbeat()).status).toBe(200);
        }
        await send(first, "PUT", "/v1/volumes", { Volumes: [ebsVolume("data")] });
        await send(second, "PUT", "/v1/jobs", { Job: writerJob("writer") });
        const alloc = await eventually(async () => {
          const allocs = (await cluster.json<{ ID: string; NodeID: string }[]>(
            first,
            "/v1/job/writer/allocations",
          )) as { ID: string; NodeID: string }[];
          expect(allocs).toHaveLength(1);
          return allocs[0]!;
        });
        const node = nodes.find((n) => n.id === alloc.NodeID)!;
        expect(node).toBeDefined();

        // The client's csi hook claims the volume and the task runs.
        const claimed = await node.rpc("CSIVolume.Claim", {
          Namespace: "default",
          Region: "global",
          VolumeID: "data",
          AllocationID: alloc.ID,
          NodeID: node.id,
          Claim: 1,
          State: 0,
          ...claimFields,
        });
        expect(claimed.status, claimed.text).toBe(200);
        const running = await node.rpc("Node.UpdateAlloc", {
          Alloc: [{ ID: alloc.ID, NodeID: node.id, ClientStatus: "running" }],
        });
        expect(running.status, running.text).toBe(200);
        const held = await cluster.json<VolumeView>(first, "/v1/volume/csi/data");
        expect(held.WriteAllocs).toEqual({ [alloc.ID]: null });

        // The job stops; the client ends the allocation and sends CSIVolume.Unpublish, which waits for the
        // detaches: the node plugin holds its answer to the node-detach call.
        await send(first, "DELETE", "/v1/job/writer");
        const ended = await node.rpc("Node.UpdateAlloc", {
          Alloc: [{ ID: alloc.ID, NodeID: node.id, ClientStatus: "complete" }],
        });
        expect(ended.status, ended.text).toBe(200);
        const unpublish = node
          .rpc("CSIVolume.Unpublish", {
            Namespace: "default",
            Region: "global",
            VolumeID: "data",
            Claim: { AllocationID: alloc.ID, NodeID: node.id, Mode: 1, State: 4, ...claimFields },
          })
          .catch((err: Error) => ({ status: 0, text: err.message, body: {} }));
        const before = await eventually(async () => {
          const calls = await pendingDetaches(node);
          expect(calls.length).toBeGreaterThan(0);
          return calls;
        });
        const underWay = await cluster.json<VolumeView>(first, "/v1/volume/csi/data");
        expect(underWay.PastClaims[alloc.ID]).toBeDefined();

        // The leader dies in the middle of the release.
        await cluster.kill(first);
        const leader = await cluster.agreedLeader();
        expect(leader).toBe(second);
        // The client reaches the new leader; it answers the calls waiting for it, as they come.
        const client = cluster.client(second, { id: node.id, secret: node.secret });
        const controller = cluster.client(second, { id: nodes[0]!.id, secret: nodes[0]!.secret });
        await eventually(
          async () => {
            await ackDetaches(client);
            if (controller.id !== client.id) await ackDetaches(controller);
            const v = await cluster.json<VolumeView>(second, "/v1/volume/csi/data");
            expect(v.PastClaims).toEqual({});
            expect(v.WriteAllocs).toEqual({});
          },
          90_000,
          200,
        );
        // The old leader's caller got an answer or an error; the release did not depend on it.
        const answered = await unpublish;
        expect([0, 200, 500, 503]).toContain(answered.status);

        // The volume's history shows each step, the old leader's detach call among them.
        const history = await cluster.json<HistoryEntry[]>(second, "/v1/volume/csi/data/history");
        const claimStates = history.filter((e) => e.Field === "Claim").map((e) => e.To?.State ?? "freed");
        expect(claimStates[0]).toBe("taken");
        expect(claimStates).toContain("node-detached");
        expect(claimStates.at(-1)).toBe("freed");
        const detachCalls = history.filter((e) => e.Field === "Detach");
        expect(detachCalls.length).toBeGreaterThanOrEqual(before.length);

        // Nothing dropped: the old leader restarts and holds exactly the new leader's state.
        await cluster.restart(first);
        await cluster.agreedLeader();
        await cluster.agreedStateHash();
        // The volume is free for a new writer, on either node.
        await send(second, "PUT", "/v1/jobs", { Job: writerJob("next") });
        await eventually(async () => {
          const allocs = await cluster.json<{ ID: string }[]>(second, "/v1/job/next/allocations");
          expect(allocs).toHaveLength(1);
        });
      } finally {
        await cluster.stop();
      }
    }, 300_000);
  });
}
