import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { useTempDirs } from "../store/helpers.ts";

const BIN = join(import.meta.dirname, "../../bin/chronomad.js");
const brokers = process.env.KAFKA_BROKERS;
if (!brokers)
  process.stderr.write("export to Kafka skipped: KAFKA_BROKERS is not set (bash .ci/run starts a broker)\n");

/** Every committed record of an export topic (read_committed), decoded. */
async function committed(topic: string): Promise<{ Index: number; Key: string; Topic: string }[]> {
  const kafka = new Kafka({
    clientId: "export-test",
    brokers: brokers!.split(","),
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  const exists = (await admin.listTopics()).includes(topic);
  const high = exists ? Number((await admin.fetchTopicOffsets(topic))[0]?.high ?? 0) : 0;
  await admin.disconnect();
  if (high === 0) return [];
  const consumer = kafka.consumer({
    groupId: `export-test-${Date.now()}-${Math.random()}`,
    readUncommitted: false,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const out: { Index: number; Key: string; Topic: string }[] = [];
  await new Promise<void>((resolve) => {
    let idle = setTimeout(resolve, 3000);
    consumer.run({
      eachMessage: async ({ message }) => {
        if (message.value)
          out.push(JSON.parse(message.value.toString()) as { Index: number; Key: string; Topic: string });
        clearTimeout(idle);
        idle = setTimeout(resolve, 1000);
      },
    });
  });
  await consumer.disconnect();
  return out;
}

function runExport(args: string[]) {
  const child = spawn(process.execPath, [BIN, "export", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d) => {
    out += String(d);
  });
  child.stderr.on("data", (d) => {
    out += String(d);
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exited, output: () => out };
}

async function positionOf(file: string): Promise<number> {
  if (!existsSync(`${file}.position`)) return 0;
  return (JSON.parse(await readFile(`${file}.position`, "utf8")) as { index: number }).index;
}

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("chronomad export", () => {
  const tempDir = useTempDirs();
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it("delivers each record exactly once across a SIGKILL and restart", async () => {
    server = await startTestServer();
    const file = join(await tempDir(), "changes.ndjson");
    const write = (name: string) => server!.call(`/v1/namespace/${name}`, { method: "PUT", body: "{}" });

    const first = runExport(["--to", `file:${file}`, "--server", server.url]);
    for (let i = 0; i < 300; i++) await write(`early-${i}`);
    await until(async () => (await positionOf(file)) > 50, "a first commit");
    // Writes keep going while the exporter dies mid-batch.
    const writing = (async () => {
      for (let i = 0; i < 300; i++) await write(`late-${i}`);
    })();
    first.child.kill("SIGKILL");
    await first.exited;
    await writing;

    const second = runExport(["--to", `file:${file}`, "--server", server.url]);
    const last = server.log.lastIndex();
    await until(async () => (await positionOf(file)) >= last, `the export to reach index ${last}`);
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
    expect(second.output()).toMatch(/export: from .* after index \d+/);

    const records = (await readFile(file, "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { Index: number; Key: string; Topic: string; Time: string; Op: string });
    // Keys are unique per topic: the first record makes namespace "default" and node pool "default".
    const seen = new Set(records.map((r) => `${r.Index}/${r.Topic}/${r.Key}`));
    expect(seen.size).toBe(records.length);
    // Every namespace write is there once, in log order.
    const keys = records.filter((r) => r.Topic === "Namespace").map((r) => r.Key);
    for (let i = 0; i < 300; i++) {
      expect(keys.filter((k) => k === `early-${i}`).length).toBe(1);
      expect(keys.filter((k) => k === `late-${i}`).length).toBe(1);
    }
    const indexes = records.map((r) => r.Index);
    expect([...indexes].sort((a, b) => a - b)).toEqual(indexes);
    expect(records[0]).toMatchObject({ Topic: "Namespace", Op: "upsert", Key: "default" });
    expect(Number.isNaN(Date.parse(records[0]!.Time))).toBe(false);
  });

  it.runIf(brokers)(
    "delivers each record exactly once to a Kafka topic across a SIGKILL and restart",
    async () => {
      server = await startTestServer();
      const topic = `chronomad-export-${Date.now()}`;
      const to = `kafka://${brokers}/${topic}`;
      const write = (name: string) => server!.call(`/v1/namespace/${name}`, { method: "PUT", body: "{}" });
      const first = runExport(["--to", to, "--server", server.url]);
      for (let i = 0; i < 200; i++) await write(`early-${i}`);
      await until(
        async () =>
          /records delivered|index \d+/.test(first.output()) || (await committed(topic)).length > 20,
        "a first commit",
      );
      const writing = (async () => {
        for (let i = 0; i < 200; i++) await write(`late-${i}`);
      })();
      first.child.kill("SIGKILL");
      await first.exited;
      await writing;
      const second = runExport(["--to", to, "--server", server.url]);
      const last = server.log.lastIndex();
      await until(
        async () => (await committed(topic)).some((r) => r.Index === last),
        `index ${last} in Kafka`,
      );
      second.child.kill("SIGTERM");
      expect(await second.exited).toBe(0);
      const records = (await committed(topic)).filter((r) => r.Topic === "Namespace");
      const keys = records.map((r) => `${r.Index}/${r.Key}`);
      expect(new Set(keys).size).toBe(keys.length);
      for (let i = 0; i < 200; i++) {
        expect(records.filter((r) => r.Key === `early-${i}`).length).toBe(1);
        expect(records.filter((r) => r.Key === `late-${i}`).length).toBe(1);
      }
    },
  );

  it("refuses bad arguments", async () => {
    const noTarget = runExport([]);
    expect(await noTarget.exited).toBe(2);
    expect(noTarget.output()).toMatch(/--to is required/);
    const badTopic = runExport(["--to", "file:/tmp/x", "--topics", "Nodes"]);
    expect(await badTopic.exited).toBe(2);
    expect(badTopic.output()).toMatch(/unknown topic "Nodes"/);
  });
});
