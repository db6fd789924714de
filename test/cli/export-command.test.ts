import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { type AddressInfo, createServer } from "node:net";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { useTempDirs } from "../store/helpers.ts";

const BIN = join(import.meta.dirname, "../../bin/chronomad.js");
const brokers = process.env.KAFKA_BROKERS;
if (!brokers)
  process.stderr.write("export to Kafka skipped: KAFKA_BROKERS is not set (bash .ci/run starts a broker)\n");

/** Every committed row of an export topic (read_committed), decoded; tombstones left out. */
async function committed(topic: string): Promise<{ Index: number; Key: string; Topic: string }[]> {
  return (await raw(topic)).flatMap((m) => (m.value === null ? [] : [JSON.parse(m.value)]));
}

/** Every committed message of a topic, key and value as text (null for a tombstone). */
async function raw(topic: string): Promise<{ key: string; value: string | null }[]> {
  const kafka = new Kafka({
    clientId: "export-test",
    brokers: brokers!.split(","),
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  const exists = (await admin.listTopics()).includes(topic);
  await admin.disconnect();
  if (!exists) return [];
  const consumer = kafka.consumer({
    groupId: `export-test-${Date.now()}-${Math.random()}`,
    readUncommitted: false,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const out: { key: string; value: string | null }[] = [];
  await new Promise<void>((resolve) => {
    let idle = setTimeout(resolve, 3000);
    consumer.run({
      eachMessage: async ({ message }) => {
        out.push({
          key: String(message.key),
          value: message.value === null ? null : message.value.toString(),
        });
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
    expect(records[0]).toMatchObject({ Topic: "Namespace", Op: "create", Key: "default", Seq: 0 });
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

  it("refuses a second exporter on the same file while the first runs", async () => {
    server = await startTestServer();
    const file = join(await tempDir(), "changes.ndjson");
    const first = runExport(["--to", `file:${file}`, "--server", server.url]);
    await until(async () => (await positionOf(file)) > 0, "a first commit");
    const second = runExport(["--to", `file:${file}`, "--server", server.url]);
    expect(await second.exited).toBe(1);
    expect(second.output()).toMatch(/is being exported to by process \d+ .*one exporter per target/);
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    // Once the first has stopped, the target is free again.
    const third = runExport(["--to", `file:${file}`, "--server", server.url]);
    await until(async () => /after index \d+/.test(third.output()), "the third exporter to start");
    third.child.kill("SIGTERM");
    expect(await third.exited).toBe(0);
  });

  it("refuses to resume an export against another cluster, naming both", async () => {
    server = await startTestServer();
    const file = join(await tempDir(), "changes.ndjson");
    const first = runExport(["--to", `file:${file}`, "--server", server.url]);
    await until(async () => (await positionOf(file)) > 0, "a first commit");
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    const clusterOf = async (s: TestServer) =>
      (await s.call("/v1/event/stream?index=0")).headers.get("x-chronomad-cluster-id");
    const a = await clusterOf(server);
    const rowsBefore = await readFile(file, "utf8");
    await server.stop();

    server = await startTestServer();
    const b = await clusterOf(server);
    expect(b).not.toBe(a);
    const other = runExport(["--to", `file:${file}`, "--server", server.url]);
    expect(await other.exited).toBe(1);
    expect(other.output()).toContain(`holds cluster ${a}'s changes`);
    expect(other.output()).toContain(`serves cluster ${b}`);
    expect(await readFile(file, "utf8")).toBe(rowsBefore);
  });

  it("says why it cannot reach a server, once, and keeps trying", async () => {
    const file = join(await tempDir(), "changes.ndjson");
    // A port nothing listens on any more.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const { port } = closed.address() as AddressInfo;
    await new Promise((r) => closed.close(r));
    const dead = runExport(["--to", `file:${file}`, "--server", `http://127.0.0.1:${port}`]);
    await until(async () => /ECONNREFUSED/.test(dead.output()), "the reason");
    dead.child.kill("SIGTERM");
    expect(await dead.exited).toBe(0);
    expect(dead.output().match(/ECONNREFUSED/g)).toHaveLength(1);
  });

  it("writes Debezium-shaped change events with --envelope debezium", async () => {
    server = await startTestServer();
    const file = join(await tempDir(), "changes.ndjson");
    await server.call("/v1/namespace/tmp", { method: "PUT", body: JSON.stringify({ Description: "a" }) });
    await server.call("/v1/namespace/tmp", { method: "PUT", body: JSON.stringify({ Description: "b" }) });
    await server.call("/v1/namespace/tmp", { method: "DELETE" });
    const exporter = runExport(["--to", `file:${file}`, "--server", server.url, "--envelope", "debezium"]);
    const last = server.log.lastIndex();
    await until(async () => (await positionOf(file)) >= last, `the export to reach index ${last}`);
    exporter.child.kill("SIGTERM");
    expect(await exporter.exited).toBe(0);
    const rows = (await readFile(file, "utf8"))
      .trim()
      .split("\n")
      .map(
        (l) =>
          JSON.parse(l) as { op: string; before: unknown; after: unknown; source: Record<string, unknown> },
      )
      .filter(
        (r) => r.source.table === "Namespace" && (r.after ?? r.before) && JSON.stringify(r).includes('"tmp"'),
      );
    expect(rows.map((r) => r.op)).toEqual(["c", "u", "d"]);
    expect(rows[1]).toMatchObject({
      before: { Key: "tmp", Description: "a" },
      after: { Key: "tmp", Description: "b" },
      source: { connector: "chronomad", record: "NamespaceUpserted", actor_kind: "remote" },
    });
    expect(rows[2]).toMatchObject({ before: { Description: "b" }, after: null });
    expect(typeof rows[0]!.source.index).toBe("number");
  });

  it.runIf(brokers)(
    "gives each topic its own compacted Kafka topic, with a tombstone after a delete",
    async () => {
      server = await startTestServer();
      const base = `chronomad-export-tables-${Date.now()}`;
      await server.call("/v1/namespace/tmp", { method: "PUT", body: "{}" });
      await server.call("/v1/namespace/tmp", { method: "DELETE" });
      const exporter = runExport([
        "--to",
        `kafka://${brokers}/${base}`,
        "--server",
        server.url,
        "--topic-per-table",
        "--compact",
      ]);
      const topic = `${base}.Namespace`;
      await until(
        async () => (await raw(topic)).some((m) => m.key === "Namespace//tmp" && m.value === null),
        "a tombstone",
      );
      exporter.child.kill("SIGTERM");
      expect(await exporter.exited).toBe(0);
      const messages = (await raw(topic)).filter((m) => m.key === "Namespace//tmp");
      expect(
        messages.map((m) => (m.value === null ? "tombstone" : (JSON.parse(m.value) as { Op: string }).Op)),
      ).toEqual(["create", "delete", "tombstone"]);
      const kafka = new Kafka({
        clientId: "export-test",
        brokers: brokers!.split(","),
        logLevel: logLevel.NOTHING,
      });
      const admin = kafka.admin();
      await admin.connect();
      const configs = await admin.describeConfigs({
        resources: [{ type: 2, name: topic, configNames: ["cleanup.policy"] }],
        includeSynonyms: false,
      });
      await admin.disconnect();
      expect(configs.resources[0]!.configEntries[0]!.configValue).toBe("compact");
      // The named topic holds only position markers.
      expect((await raw(base)).every((m) => m.key === "chronomad-position")).toBe(true);
    },
  );

  it("prints its usage with --help", async () => {
    const help = runExport(["--help"]);
    expect(await help.exited).toBe(0);
    expect(help.output()).toMatch(/^Usage: chronomad export/);
    expect(help.output()).toContain("--envelope");
  });

  it("refuses bad arguments", async () => {
    const noTopic = runExport(["--to", "kafka://127.0.0.1:9092"]);
    expect(await noTopic.exited).toBe(2);
    expect(noTopic.output()).toMatch(/--to: bad Kafka log URL .*expected kafka:\/\/host:port/);
    const noTarget = runExport([]);
    expect(await noTarget.exited).toBe(2);
    expect(noTarget.output()).toMatch(/--to is required/);
    const badTopic = runExport(["--to", "file:/tmp/x", "--topics", "Nodes"]);
    expect(await badTopic.exited).toBe(2);
    expect(badTopic.output()).toMatch(/unknown topic "Nodes"/);
  });
});
