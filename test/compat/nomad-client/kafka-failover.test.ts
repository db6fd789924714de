import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Cluster, type Member, useClusterTopics } from "../../cluster/cluster-fixture.ts";
import { hasNomad, NOMAD_BIN, startClientAgent, stopAllAgents, waitFor } from "./client-agent.ts";
import { Api, batchJob, describeAllocs } from "./fixtures.ts";

const brokers = process.env.KAFKA_BROKERS;
const why = !brokers
  ? "KAFKA_BROKERS is not set (scripts/kafka.sh start prints a broker's address)"
  : !hasNomad
    ? `no nomad binary at ${NOMAD_BIN} (set NOMAD_BIN)`
    : "";

/** The RPC address a `chronomad serve` process logged when it started serving. */
function rpcAddress(m: Member): string {
  const serving = m.process.lines.find((l) => l.msg === "chronomad serving");
  const rpc = serving?.rpc;
  if (typeof rpc !== "string" || rpc === "")
    throw new Error(`${m.name} logged no RPC address: ${JSON.stringify(serving)}`);
  return rpc;
}

/** How many client nodes hold an RPC session with this server (its chronomad.rpc.client_nodes gauge). */
async function clientNodesOn(m: Member): Promise<number> {
  const text = await (await fetch(`${m.url}/v1/metrics?format=prometheus`)).text();
  const value = /^chronomad_rpc_client_nodes(?:\{[^}]*\})?\s+(\S+)/m.exec(text)?.[1];
  if (value === undefined) throw new Error(`${m.name} exports no chronomad_rpc_client_nodes`);
  return Number(value);
}

if (why) {
  console.warn(`real Nomad client failover test skipped: ${why}`);
  describe.skip(`a real Nomad client across a chronomad leader failover — skipped: ${why}`, () => {
    it("needs a Kafka broker and the nomad binary", () => undefined);
  });
} else {
  const topics = useClusterTopics(brokers!);
  let cluster: Cluster | undefined;
  let work = "";

  afterAll(async () => {
    await stopAllAgents();
    await cluster?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  describe("a real Nomad 1.6.1 client across a chronomad leader failover", () => {
    it("finishes the batch job it was running when the leader died, and runs a job registered through the survivor", async () => {
      const topic = `chronomad-nomad-client-${randomUUID()}`;
      topics.push(topic);
      cluster = await Cluster.start(
        `kafka://${brokers}/${topic}`,
        ["s1", "s2"],
        ["--min-heartbeat-ttl", "2s", "--heartbeat-grace", "5s"],
      );
      const c = cluster;
      const leader = await c.agreedLeader();
      const survivor = c.members.find((m) => m !== leader)!;
      work = await mkdtemp(join(tmpdir(), "nomad-failover-work-"));
      const agent = await startClientAgent({
        servers: c.members.map(rpcAddress),
        name: "failover-client",
        serverUrl: survivor.url,
      });
      const viaLeader = new Api(leader.url);
      const viaSurvivor = new Api(survivor.url);
      const nodeID = await waitFor(
        async () => {
          const id = await agent.nodeID();
          return id && (await viaLeader.node(id))?.Status === "ready" ? id : undefined;
        },
        { what: "the client's node ready on the leader", timeoutMs: 90_000 },
      );

      // The client picks one of its servers at random: restart it until it
      // talks to the leader, so the kill takes its server away from it.
      for (let restarts = 0; ; restarts++) {
        const where = await waitFor(
          async () => {
            const [onLeader, onSurvivor] = await Promise.all([
              clientNodesOn(leader),
              clientNodesOn(survivor),
            ]);
            return onLeader + onSurvivor === 1 ? { onLeader } : undefined;
          },
          { what: "one server holding the client's RPC session", timeoutMs: 60_000 },
        );
        if (where.onLeader === 1) {
          console.log(`failover: the client talks to the leader (after ${restarts} restarts)`);
          break;
        }
        if (restarts >= 10) throw new Error("the client never picked the leader in 10 restarts");
        await agent.restart();
      }

      // Long enough to kill the leader while it runs.
      const started = join(work, "first.started");
      const done = join(work, "first.done");
      await viaLeader.register(
        batchJob("before-failover", {
          script: `echo $NOMAD_ALLOC_ID > ${started}; sleep 15; echo ok > ${done}`,
        }),
      );
      await waitFor(() => existsSync(started), {
        what: "the first batch task to start",
        timeoutMs: 90_000,
        detail: async () => describeAllocs(await viaLeader.allocs("before-failover")),
      });
      const allocID = readFileSync(started, "utf8").trim();
      await c.kill(leader);
      const killedAt = Date.now();

      const detail = async () =>
        `${describeAllocs(await viaSurvivor.allocs("before-failover").catch(() => []))}\n` +
        `node: ${JSON.stringify(await viaSurvivor.node(nodeID).catch(String))}\n` +
        `survivor's log tail: ${survivor.process.lines
          .slice(-15)
          .map((l) => JSON.stringify(l))
          .join("\n")}`;
      const newLeader = await c.agreedLeader(120_000);
      expect(newLeader).toBe(survivor);
      console.log(`failover: leader killed -> survivor leads: ${Date.now() - killedAt} ms`);
      await waitFor(() => existsSync(done), {
        what: "the first batch task to finish",
        timeoutMs: 90_000,
        detail,
      });
      const complete = await waitFor(
        async () => {
          const a = await viaSurvivor.alloc(allocID);
          return a.ClientStatus === "complete" ? a : undefined;
        },
        { what: "the survivor to show the first allocation complete", timeoutMs: 120_000, detail },
      );
      console.log(
        `failover: leader killed -> first job complete on the survivor: ${Date.now() - killedAt} ms`,
      );
      expect(complete.TaskStates?.main).toMatchObject({ State: "dead", Failed: false });
      // The node never went down over it: the new leader re-armed its heartbeat timer.
      expect((await viaSurvivor.node(nodeID))?.Status).toBe("ready");

      const after = join(work, "second.out");
      await viaSurvivor.register(batchJob("after-failover", { script: `echo ok > ${after}` }));
      await waitFor(() => existsSync(after), {
        what: "the job registered through the survivor to run on the client",
        timeoutMs: 90_000,
        detail: async () => describeAllocs(await viaSurvivor.allocs("after-failover")),
      });
      await waitFor(
        async () => (await viaSurvivor.allocs("after-failover"))[0]?.ClientStatus === "complete",
        {
          what: "the second allocation complete on the survivor",
          timeoutMs: 90_000,
          detail: async () => describeAllocs(await viaSurvivor.allocs("after-failover")),
        },
      );
      // How the client's server list moved (Nomad logs each change), for the closing note.
      console.log(
        `failover: the client's server lists:\n${agent
          .logText()
          .split("\n")
          .filter((l) => l.includes("new server list"))
          .map((l) => l.replace(/^.*new server list: /, "  "))
          .join("\n")}`,
      );
      const statuses = (await viaSurvivor.history("node", nodeID))
        .filter((h) => h.Field === "Status")
        .map((h) => h.To);
      expect(statuses).toEqual(["ready"]);
    }, 420_000);
  });
}
