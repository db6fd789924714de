import { execFile, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { Kafka, logLevel } from "kafkajs";
import { pino } from "pino";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import { generateEventSchemas } from "../../scripts/event-schemas.mts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { openLog } from "../../src/log/open-log.ts";
import { NodeSimulator } from "../../src/nodesim/simulator.ts";
import { allSchemas } from "../../streams/index.ts";
import { eventually } from "../nodesim/fixtures.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { useTempDirs } from "../store/helpers.ts";

/**
 * docs/log-format.md is enough to read a log: decode_chronomad_log.py, a
 * decoder written from it alone (Python, msgpack, confluent-kafka), reads
 * the log of a real server with some history and finds the same records, by
 * type, as `chronomad log inspect`. The Python packages come from a
 * virtualenv cached under ~/.cache/chronomad (venv.sh, which .ci/run also
 * runs); without python3 or the packages, the test is skipped, saying so.
 */

const here = import.meta.dirname;
const BIN = join(here, "../../bin/chronomad.js");
const DECODER = join(here, "decode_chronomad_log.py");
const brokers = process.env.KAFKA_BROKERS;

function findPython(): { python?: string; why?: string } {
  const venv = spawnSync("bash", [join(here, "venv.sh")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 5 * 60_000,
  });
  if (venv.status !== 0) return { why: (venv.stderr || venv.error?.message || "venv.sh failed").trim() };
  return { python: venv.stdout.trim() };
}

const { python, why } = findPython();
if (!python) console.warn(`log format decoder test skipped: ${why}`);
if (python && !brokers) {
  console.warn(
    "log format decoder test of a Kafka log skipped: KAFKA_BROKERS is not set (bash .ci/run starts a broker)",
  );
}

interface Summary {
  readonly records: number;
  readonly firstIndex: number | null;
  readonly lastIndex: number | null;
  readonly types: Record<string, number>;
}

function run(command: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // Asynchronous: the server it may read beside runs in this process.
    execFile(command, args, { maxBuffer: 64 * 1024 * 1024, timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err ? Number((err as NodeJS.ErrnoException).code ?? 1) || 1 : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

async function inspect(url: string): Promise<Summary> {
  const r = await run(process.execPath, [BIN, "log", "inspect", "--log", url, "--json"]);
  expect(r.code, r.stdout + r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Summary;
}

async function decode(args: string[]): Promise<Summary> {
  const r = await run(python!, [DECODER, ...args]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Summary;
}

const job = (count: number) => ({
  ID: "web",
  Type: "service",
  Datacenters: ["dc1"],
  TaskGroups: [
    {
      Name: "web",
      Count: count,
      Tasks: [{ Name: "server", Driver: "mock_driver", Config: {}, Resources: { CPU: 100, MemoryMB: 64 } }],
    },
  ],
});

async function call(s: TestServer, path: string, method: string, body?: unknown) {
  const res = await s.call(path, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  expect(res.status, `${method} ${path}: ${text}`).toBe(200);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

const running = (s: TestServer) =>
  [...s.store.table<AllocRow>("allocs").all()].filter(
    (a) => a.JobID === "web" && a.DesiredStatus === "run" && a.ClientStatus === "running",
  ).length;

/**
 * Nodes that register and heartbeat, a job placed and run on them, a
 * namespace, a drain, a scale-up and a stop: records of many types, with
 * nanosecond times (int64) in the allocations' updates.
 */
async function makeHistory(s: TestServer, stopAfter: (stop: () => Promise<void>) => void): Promise<void> {
  const sim = new NodeSimulator({
    server: s.url,
    nodes: 3,
    seed: "log-format-decoder",
    initialHeartbeatStaggerMs: 200,
    driver: {
      setup: { min: 5, max: 10 },
      pull: { min: 5, max: 10 },
      start: { min: 5, max: 10 },
      failureRate: 0,
    },
    logger: pino({ level: "silent" }),
  });
  stopAfter(() => sim.stop());
  await sim.start();
  await call(s, "/v1/namespace/analytics", "PUT", { Name: "analytics", Description: "for the decoder test" });
  await call(s, "/v1/jobs", "PUT", { Job: job(3) });
  await eventually("three allocations running", () => running(s) === 3, 30_000);
  const nodes = (await (await s.call("/v1/nodes")).json()) as { ID: string }[];
  await call(s, `/v1/node/${nodes[0]!.ID}/drain`, "PUT", {
    NodeID: nodes[0]!.ID,
    DrainSpec: { Deadline: 60e9, IgnoreSystemJobs: false },
  });
  await call(s, "/v1/jobs", "PUT", { Job: job(4) });
  await eventually("four allocations running", () => running(s) >= 4, 30_000);
  await call(s, "/v1/job/web", "DELETE");
}

/** Every record decoded by chronomad itself, each one's data checked against its committed schema. */
async function checkSchemas(url: string): Promise<number> {
  const generated = generateEventSchemas();
  const ajv = new Ajv2020({ allErrors: true, allowUnionTypes: true });
  const validators = new Map([...generated.schemas].map(([t, s]) => [t, ajv.compile(s)]));
  const envelope = ajv.compile(generated.envelope);
  const codec = new EnvelopeCodec(allSchemas);
  const log = await openLog(url, { logger: pino({ level: "silent" }), readOnly: true });
  let n = 0;
  try {
    for await (const batch of log.read(log.firstIndex(), { untilIndex: log.lastIndex() })) {
      for (const r of batch) {
        const e = codec.decode(r.bytes);
        const validate = validators.get(e.type)!;
        expect(validate(e.data), `record ${r.index} ${e.type}: ${ajv.errorsText(validate.errors)}`).toBe(
          true,
        );
        expect(envelope(e), `record ${r.index}: ${ajv.errorsText(envelope.errors)}`).toBe(true);
        n++;
      }
    }
  } finally {
    await log.close();
  }
  return n;
}

describe.runIf(python)("a decoder written from docs/log-format.md", () => {
  const tempDir = useTempDirs();
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c().catch(() => undefined);
  });

  it("reads a file log record for record as chronomad does", { timeout: 180_000 }, async () => {
    const dataDir = await tempDir();
    const s = await startTestServer({ dataDir });
    let stopped = false;
    cleanup.push(async () => {
      if (!stopped) await s.stop();
    });
    await makeHistory(s, (stop) => cleanup.push(stop));
    const url = `file:${join(dataDir, "log")}`;

    // Beside the running server: both read what is there, without a lock.
    const live = await inspect(url);
    expect(live.records).toBeGreaterThan(20);
    const liveDecoded = await decode(["file", join(dataDir, "log")]);
    expect(liveDecoded.records).toBeGreaterThanOrEqual(live.records);

    await cleanup.pop()!(); // the simulated nodes
    stopped = true;
    await s.stop();
    const summary = await inspect(url);
    expect(await decode(["file", join(dataDir, "log")])).toEqual(summary);
    expect(summary.firstIndex).toBe(1);
    expect(summary.lastIndex).toBe(summary.records);
    for (const type of ["ClusterBootstrapped", "NodeRegistered", "JobRegistered", "AllocsPlanApplied"])
      expect(summary.types[type], type).toBeGreaterThan(0);
    expect(summary.types.AllocClientUpdated).toBeGreaterThan(0);
    expect(summary.types.NodeDrainUpdated).toBeGreaterThan(0);
    expect(await checkSchemas(url)).toBe(summary.records);
  });

  describe.runIf(brokers)("on Kafka", () => {
    const topics: string[] = [];
    afterAll(async () => {
      const admin = new Kafka({ brokers: brokers!.split(","), logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      await admin.deleteTopics({ topics: topics.flatMap((t) => [t, `${t}.leader`]) }).catch(() => undefined);
      await admin.disconnect();
    });

    it("reads a Kafka log record for record as chronomad does", { timeout: 180_000 }, async () => {
      const topic = `chronomad-log-format-${randomUUID()}`;
      topics.push(topic);
      const url = `kafka://${brokers}/${topic}`;
      const s = await startTestServer({ args: ["--log", url] });
      let stopped = false;
      cleanup.push(async () => {
        if (!stopped) await s.stop();
      });
      await makeHistory(s, (stop) => cleanup.push(stop));
      await cleanup.pop()!();
      stopped = true;
      await s.stop();

      const summary = await inspect(url);
      expect(await decode(["kafka", brokers!, topic])).toEqual(summary);
      expect(summary.firstIndex).toBe(1);
      expect(summary.types.AllocClientUpdated).toBeGreaterThan(0);
      expect(await checkSchemas(url)).toBe(summary.records);
    });
  });
});
