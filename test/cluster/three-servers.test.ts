import { randomUUID } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, describe, expect, it } from "vitest";
import { Cluster, NamespaceWriters } from "./cluster-fixture.ts";
import { eventually } from "./eventually.ts";

const brokers = process.env.KAFKA_BROKERS;

if (!brokers) {
  console.warn("Three-server cluster test skipped: KAFKA_BROKERS is not set (bash .ci/run starts a broker)");
  describe.skip("three servers on one Kafka topic — skipped: KAFKA_BROKERS is not set (bash .ci/run starts a broker)", () => {
    it("needs a real broker", () => undefined);
  });
} else {
  const topics: string[] = [];
  afterAll(async () => {
    const admin = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: topics.flatMap((t) => [t, `${t}.leader`]) }).catch(() => undefined);
    await admin.disconnect();
  });

  describe("three servers on one Kafka topic", () => {
    it("loses no acknowledged write when the leader is killed mid-writes, and elects a new one", async () => {
      const topic = `chronomad-cluster-${randomUUID()}`;
      topics.push(topic);
      const cluster = await Cluster.start(`kafka://${brokers}/${topic}`, ["s1", "s2", "s3"]);
      try {
        const first = await cluster.agreedLeader();
        const before = await cluster.agreedStateHash();
        expect(before.Leader).toBe(first.name);

        const writers = new NamespaceWriters(cluster, 6);
        await writers.more(60);
        await cluster.kill(first);
        const killedAt = writers.acked.length;
        const second = await cluster.agreedLeader();
        expect(second).not.toBe(first);
        await writers.more(60);
        await writers.stop();
        // Writes went through every server, before and after the kill.
        for (const m of cluster.members) expect(writers.acked.some((a) => a.via === m.name)).toBe(true);
        expect(writers.acked.slice(killedAt).some((a) => a.via === second.name)).toBe(true);

        const after = await cluster.agreedStateHash();
        expect(after.LeadershipEpoch).toBeGreaterThan(before.LeadershipEpoch);
        expect(after.Leader).toBe(second.name);
        for (const survivor of cluster.alive()) {
          const names = new Set(
            (await cluster.json<{ Name: string }[]>(survivor, "/v1/namespaces")).map((n) => n.Name),
          );
          const missing = writers.acked.filter((a) => !names.has(a.name));
          expect(missing, `acknowledged writes missing on ${survivor.name}`).toEqual([]);
        }

        // Each survivor still takes writes, and the other one sees them.
        for (const via of cluster.alive()) {
          const res = await fetch(`${via.url}/v1/namespace/after-${via.name}`, { method: "PUT", body: "{}" });
          expect(res.status).toBe(200);
          for (const reader of cluster.alive()) {
            await eventually(async () =>
              expect((await fetch(`${reader.url}/v1/namespace/after-${via.name}`)).status).toBe(200),
            );
          }
        }
        await cluster.agreedStateHash();
      } finally {
        await cluster.stop();
      }
    }, 240_000);
  });
}
