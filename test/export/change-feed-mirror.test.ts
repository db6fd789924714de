import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import type { JobRow } from "../../projections/jobs.ts";
import type { NodeRow } from "../../projections/nodes.ts";
import { runExport } from "../../src/cli/export-command.ts";
import { POSITION_KEY } from "../../src/export/kafka-sink.ts";
import { NodeSimulator } from "../../src/nodesim/simulator.ts";
import { eventually, FAST_DRIVER, FAST_HEARTBEATS } from "../nodesim/fixtures.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { serviceJob } from "../services/scheduler/scenario.ts";
import { useTempDirs } from "../store/helpers.ts";
import { differences, type ExportedRow, Mirror } from "./mirror.ts";

const brokers = process.env.KAFKA_BROKERS;
if (!brokers) {
  process.stderr.write(
    "change feed mirror from a Kafka export skipped: KAFKA_BROKERS is not set (bash .ci/run starts a broker)\n",
  );
}

const AGENT = "change-feed-test/1.0 (operator script)";

/** Every committed row of a Kafka export topic, in order (tombstones and position markers left out). */
async function kafkaRows(topic: string): Promise<ExportedRow[]> {
  const kafka = new Kafka({
    clientId: "mirror-test",
    brokers: brokers!.split(","),
    logLevel: logLevel.NOTHING,
  });
  const consumer = kafka.consumer({
    groupId: `mirror-test-${Date.now()}-${Math.random()}`,
    readUncommitted: false,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const rows: ExportedRow[] = [];
  await new Promise<void>((resolve) => {
    let idle = setTimeout(resolve, 5000);
    consumer.run({
      eachMessage: async ({ message }) => {
        if (message.value && message.key?.toString() !== POSITION_KEY) {
          rows.push(JSON.parse(message.value.toString()) as ExportedRow);
        }
        clearTimeout(idle);
        idle = setTimeout(resolve, 1500);
      },
    });
  });
  await consumer.disconnect();
  return rows;
}

async function fileRows(path: string): Promise<ExportedRow[]> {
  return (await readFile(path, "utf8"))
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as ExportedRow);
}

describe("the change feed, mirrored by a consumer", () => {
  const tempDir = useTempDirs();
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  it("equals the API's jobs, allocations, nodes and evaluations at every checked index, deletes included", async () => {
    const s: TestServer = await startTestServer({ args: FAST_HEARTBEATS });
    cleanup.push(() => s.stop());
    const sim = new NodeSimulator({
      server: s.url,
      nodes: 5,
      seed: "change-feed",
      initialHeartbeatStaggerMs: 200,
      driver: FAST_DRIVER,
    });
    cleanup.push(() => sim.stop());
    await sim.start();

    const file = join(await tempDir(), "changes.ndjson");
    const kafkaTopic = `chronomad-mirror-${Date.now()}`;
    const stopExports = new AbortController();
    const sink = { write: () => true } as unknown as NodeJS.WritableStream;
    const exporters = [runExport(["--to", `file:${file}`, "--server", s.url], sink, stopExports.signal)];
    if (brokers) {
      exporters.push(
        runExport(["--to", `kafka://${brokers}/${kafkaTopic}`, "--server", s.url], sink, stopExports.signal),
      );
    }
    cleanup.push(async () => {
      stopExports.abort();
      await Promise.all(exporters);
    });

    const call = async (path: string, method: string, body?: unknown) => {
      const res = await fetch(s.url + path, {
        method,
        headers: { "User-Agent": AGENT },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      expect(res.status, `${method} ${path}: ${text}`).toBe(200);
      return text === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
    };
    const allocs = () => s.store.table<AllocRow>("allocs");
    const live = (job: string) =>
      [...allocs().all()].filter(
        (a) => a.JobID === job && a.DesiredStatus === "run" && a.ClientStatus === "running",
      );
    const checkpoints: number[] = [];
    const mark = () => checkpoints.push(s.log.lastIndex());

    await eventually(
      "five ready nodes",
      () => [...s.store.table<NodeRow>("nodes").all()].filter((n) => n.Status === "ready").length === 5,
    );
    const web = serviceJob("web", 3, { Update: { MaxParallel: 1 } });
    await call("/v1/jobs", "PUT", { Job: web });
    const report = {
      ID: "report",
      Type: "batch",
      Datacenters: ["dc1"],
      TaskGroups: [
        {
          Name: "run",
          Count: 2,
          Tasks: [
            {
              Name: "run",
              Driver: "mock_driver",
              Config: { run_for: "200ms" },
              Resources: { CPU: 100, MemoryMB: 64 },
            },
          ],
        },
      ],
    };
    await call("/v1/jobs", "PUT", { Job: report });
    await eventually("web running", () => live("web").length === 3);
    mark();

    // A drain with a deadline and a message.
    const drained = live("web")[0]!.NodeID;
    const drain = await call(`/v1/node/${drained}/drain`, "PUT", {
      DrainSpec: { Deadline: 60_000_000_000, IgnoreSystemJobs: false },
      Meta: { message: "kernel upgrade" },
    });
    const drainIndex = Number(drain.Index ?? drain.NodeModifyIndex);
    await eventually(
      "web moved off the drained node",
      () => live("web").length === 3 && live("web").every((a) => a.NodeID !== drained),
    );
    mark();

    // A rolling update.
    await call("/v1/jobs", "PUT", { Job: { ...web, Meta: { release: "2" } } });
    await eventually("web v1 running", () => {
      const job = s.store.table<JobRow>("jobs").get("default\u0000web");
      return job?.Version === 1 && live("web").length === 3;
    });
    mark();

    // Two nodes stop heartbeating, go down, and come back.
    await sim.disconnectWave({ share: 0.4, durationMs: 5_000 });
    await eventually("every node ready again", () =>
      [...s.store.table<NodeRow>("nodes").all()].every((n) => n.Status === "ready"),
    );
    mark();

    // Evaluations deleted by filter, a purge and a forced GC.
    await call("/v1/operator/scheduler/configuration", "PUT", {
      SchedulerAlgorithm: "binpack",
      PauseEvalBroker: true,
    });
    await call("/v1/evaluations", "DELETE", { Filter: 'Status == "complete"' });
    mark();
    await call("/v1/operator/scheduler/configuration", "PUT", {
      SchedulerAlgorithm: "binpack",
      PauseEvalBroker: false,
    });

    await call("/v1/job/report?purge=true", "DELETE");
    await call("/v1/system/gc", "PUT");
    mark();
    const last = s.log.lastIndex();
    const position = async () => {
      try {
        return (JSON.parse(await readFile(`${file}.position`, "utf8")) as { index: number }).index;
      } catch {
        return 0;
      }
    };
    await eventually(`the file export to reach index ${last}`, async () => (await position()) >= last);
    const rows = await fileRows(file);
    const kafka = brokers
      ? await (async () => {
          let got: ExportedRow[] = [];
          await eventually(`the Kafka export to reach index ${last}`, async () => {
            got = await kafkaRows(kafkaTopic);
            return got.some((r) => (r.Index as number) >= last) || got.at(-1)?.Index === last;
          });
          return got;
        })()
      : undefined;

    // Something was deleted, and every kind of delete shows.
    expect(rows.filter((r) => r.Op === "delete").map((r) => `${r.Topic}/${r.Record}`)).toEqual(
      expect.arrayContaining([
        "Job/JobDeregistered",
        "Evaluation/EvaluationsDeletedByFilter",
        "Allocation/GarbageCollected",
      ]),
    );
    // Rows are totally ordered by (Index, Seq), and no object appears twice at one index.
    const order = rows.map((r) => `${r.Index}.${r.Seq}`);
    expect(new Set(order).size).toBe(rows.length);
    const objects = rows.map((r) => `${r.Index}/${r.Topic}/${r.Namespace}/${r.Key}`);
    expect(new Set(objects).size).toBe(rows.length);
    expect(new Set(rows.map((r) => r.ClusterID)).size).toBe(1);

    const end = Mirror.of(rows);
    expect(end.tables.get("Node")?.size).toBe(5);
    expect(end.tables.get("Job")?.has("default/report")).toBe(false);
    expect(end.tables.get("Allocation")?.size).toBeGreaterThanOrEqual(3);
    expect(end.tables.get("Evaluation")?.size).toBeGreaterThanOrEqual(1);
    for (const [name, feed] of Object.entries({ file: rows, kafka })) {
      if (!feed) continue;
      expect(await differences(s.url, Mirror.of(feed, last), last), `${name} mirror at the end`).toEqual([]);
      for (const index of checkpoints) {
        expect(await differences(s.url, Mirror.of(feed, index), index), `${name} mirror at ${index}`).toEqual(
          [],
        );
      }
    }

    // Every human action has a named actor; the drain's migrations link to it.
    const human = rows.filter(
      (r) =>
        ["JobRegistered", "JobDeregistered", "EvaluationsDeletedByFilter"].includes(String(r.Record)) ||
        (r.Record === "NodeDrainUpdated" && r.Index === drainIndex),
    );
    expect(human.length).toBeGreaterThan(0);
    for (const r of human) {
      expect(r.ActorKind, `${r.Record} at ${r.Index}`).not.toBe("anonymous");
      expect(r).toMatchObject({ ActorAddr: "127.0.0.1", ActorUserAgent: AGENT });
    }
    const migrations = rows.filter(
      (r) => r.Topic === "Allocation" && r.Record === "AllocsDesiredTransitionUpdated",
    );
    expect(migrations.length).toBeGreaterThan(0);
    for (const m of migrations)
      expect(m).toMatchObject({
        CauseType: "NodeDrainUpdated",
        CauseIndex: drainIndex,
        CauseNodeID: drained,
        Migrate: true,
      });
  });
});
