import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Cluster, type Member, NamespaceWriters } from "./cluster-fixture.ts";
import { eventually } from "./eventually.ts";

const esdbUrl = process.env.ESDB_URL;

if (!esdbUrl) {
  process.stderr.write("Two servers on one EventStoreDB stream skipped: ESDB_URL is not set\n");
  describe.skip("two servers on one EventStoreDB stream — skipped: ESDB_URL is not set", () => {
    it("needs a real EventStoreDB server", () => undefined);
  });
} else {
  const nodeStatus = async (cluster: Cluster, m: Member, id: string) =>
    (await cluster.json<{ Status: string }>(m, `/v1/node/${id}`)).Status;

  describe("two servers on one EventStoreDB stream", () => {
    it("elect one leader, forward a follower's heartbeats to it, hand over when it stops, and lose no acknowledged write", async () => {
      const log = `${esdbUrl}${esdbUrl.includes("?") ? "&" : "?"}stream=chronomad-cluster-${randomUUID()}`;
      const cluster = await Cluster.start(log, ["s1", "s2"], ["--leader-session-timeout", "3s"]);
      try {
        const first = await cluster.agreedLeader();
        const before = await cluster.agreedStateHash();
        expect(before.Leader).toBe(first.name);

        // A client node registers and heartbeats through the follower, which
        // forwards the heartbeat to the leader's timers.
        const follower = cluster.alive().find((m) => m !== first)!;
        const node = cluster.client(follower);
        expect((await node.register()).status).toBe(200);
        expect((await node.heartbeat()).status).toBe(200);
        for (const m of cluster.alive()) {
          await eventually(async () => expect(await nodeStatus(cluster, m, node.id)).toBe("ready"));
        }

        // Writes through both servers, while the leader stops (it releases the lease).
        const writers = new NamespaceWriters(cluster, 4);
        await writers.more(40);
        first.alive = false;
        first.process.child.kill("SIGTERM");
        await first.process.exited;
        const stoppedAt = writers.acked.length;
        const second = await cluster.agreedLeader();
        expect(second).toBe(follower);
        await writers.more(40);
        await writers.stop();
        for (const m of cluster.members) expect(writers.acked.some((a) => a.via === m.name)).toBe(true);
        expect(writers.acked.slice(stoppedAt).some((a) => a.via === second.name)).toBe(true);

        const after = await cluster.agreedStateHash();
        expect(after.LeadershipEpoch).toBeGreaterThan(before.LeadershipEpoch);
        expect(after.Leader).toBe(second.name);
        const names = new Set(
          (await cluster.json<{ Name: string }[]>(second, "/v1/namespaces")).map((n) => n.Name),
        );
        expect(writers.acked.filter((a) => !names.has(a.name))).toEqual([]);

        // The stopped server comes back as a follower, catches up, and takes writes.
        await cluster.restart(first);
        expect(await cluster.agreedLeader()).toBe(second);
        const res = await fetch(`${first.url}/v1/namespace/back`, { method: "PUT", body: "{}" });
        expect(res.status).toBe(200);
        await eventually(async () =>
          expect((await fetch(`${second.url}/v1/namespace/back`)).status).toBe(200),
        );
        await cluster.agreedStateHash();
      } finally {
        await cluster.stop();
      }
    }, 240_000);
  });
}
