import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { Writable } from "node:stream";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, describe, expect, it } from "vitest";
import { mixedHistory } from "../../src/bench/mixed-history.ts";
import { runLogCommand } from "../../src/cli/log-command.ts";
import { EnvelopeCodec, packPlain } from "../../src/codec/envelope-codec.ts";
import { openFileLog } from "../../src/log/file/index.ts";
import { openKafkaLog } from "../../src/log/kafka/index.ts";
import type { Envelope } from "../../streams/event-schema.ts";
import { allSchemas } from "../../streams/index.ts";
import { tempDirs } from "../log/temp-dirs.ts";

const BIN = join(import.meta.dirname, "../../bin/chronomad.js");
const brokers = process.env.KAFKA_BROKERS;
if (!brokers) {
  process.stderr.write(
    "log inspect of a Kafka log skipped: KAFKA_BROKERS is not set (bash .ci/run starts a broker)\n",
  );
}

const dirs = tempDirs("log-inspect");
afterAll(() => dirs.cleanup());
const codec = new EnvelopeCodec(allSchemas);

async function run(args: string[]): Promise<{ code: number; output: string }> {
  let output = "";
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      output += chunk.toString();
      done();
    },
  });
  const code = await runLogCommand(args, out);
  return { code, output };
}

function countTypes(events: readonly Envelope[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const e of events) counts[e.type] = (counts[e.type] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1)));
}

describe("chronomad log inspect", () => {
  it("counts the records of a file log by type, beside the process that has it open", async () => {
    const dataDir = await dirs.make();
    const events = [...mixedHistory(3000, 4)];
    // Small segments: the count crosses segment boundaries.
    const log = await openFileLog(join(dataDir, "log"), { segmentBytes: 16 * 1024, fsync: "never" });
    for (let i = 0; i < events.length; i += 700)
      await log.append(events.slice(i, i + 700).map((e) => codec.encode(e)));
    try {
      const json = await run(["inspect", "--data-dir", dataDir, "--json"]);
      expect(json.code, json.output).toBe(0);
      const summary = JSON.parse(json.output);
      expect(summary).toEqual({ records: 3000, firstIndex: 1, lastIndex: 3000, types: countTypes(events) });
      expect(Object.keys(summary.types)).toEqual(Object.keys(summary.types).sort());

      const text = await run(["inspect", `--log=file:${join(dataDir, "log")}`]);
      expect(text.code).toBe(0);
      expect(text.output).toMatch(/^records: 3000$/m);
      expect(text.output).toMatch(/^indexes: 1\.\.3000$/m);
      expect(text.output).toMatch(
        new RegExp(`^  NamespaceUpserted +${summary.types.NamespaceUpserted}$`, "m"),
      );
    } finally {
      await log.close();
    }
  });

  it("reads the type of a record whose keys are in another order, and reports an empty log", async () => {
    const dir = join(await dirs.make(), "log");
    const log = await openFileLog(dir, { fsync: "never" });
    await log.append([packPlain({ v: 1, at: 1, type: "NamespaceDeleted", data: { Name: "x" } })]);
    await log.close();
    expect(JSON.parse((await run(["inspect", "--log", `file:${dir}`, "--json"])).output)).toEqual({
      records: 1,
      firstIndex: 1,
      lastIndex: 1,
      types: { NamespaceDeleted: 1 },
    });

    const emptyDir = join(await dirs.make(), "log");
    await mkdir(emptyDir);
    const empty = await run(["inspect", "--log", `file:${emptyDir}`, "--json"]);
    expect(empty.code).toBe(0);
    expect(JSON.parse(empty.output)).toEqual({ records: 0, firstIndex: null, lastIndex: null, types: {} });
  });

  it("exits 1 naming a record that is not an envelope, 2 on a missing log or bad arguments", async () => {
    const dir = join(await dirs.make(), "log");
    const log = await openFileLog(dir, { fsync: "never" });
    await log.append([codec.encode([...mixedHistory(1)][0]!), new Uint8Array([0xc1]), packPlain({ a: 1 })]);
    await log.close();
    const bad = await run(["inspect", "--log", `file:${dir}`]);
    expect(bad.code).toBe(1);
    expect(bad.output).toMatch(/record 2 is not (valid msgpack|an envelope)/);

    const missing = await run(["inspect", "--log", `file:${join(dir, "nope")}`]);
    expect(missing.code).toBe(2);
    expect(missing.output).toMatch(/does not exist/);
    const badEsdb = await run(["inspect", "--log", "esdb://nowhere"]);
    expect(badEsdb.code).toBe(2);
    expect(badEsdb.output).toMatch(/bad EventStoreDB log URL "esdb:\/\/nowhere"/);
    for (const args of [
      ["inspect", "--log", "ftp://localhost:2113"],
      ["inspect", "--truncate-after", "3"],
      ["inspect", "--json", "--json"],
      ["verify", "--json"],
      ["inspect", "--data-dir", "a", "--log", "file:b"],
    ]) {
      const { code, output } = await run(args);
      expect(code, args.join(" ")).toBe(2);
      expect(output).toMatch(/^chronomad log: /);
    }
  });

  it("answers --help and -h, on `log` and on each subcommand, with usage on stdout and exit 0", async () => {
    for (const args of [["--help"], ["-h"], ["help"]]) {
      const { code, output } = await run(args);
      expect(code, args.join(" ")).toBe(0);
      for (const sub of ["verify", "repair", "inspect"]) expect(output).toContain(`chronomad log ${sub}`);
    }
    for (const sub of ["verify", "repair", "inspect"]) {
      for (const flag of ["--help", "-h"]) {
        const { code, output } = await run([sub, flag]);
        expect(code, `${sub} ${flag}`).toBe(0);
        expect(output).toContain(`chronomad log ${sub} `);
        for (const other of ["verify", "repair", "inspect"].filter((s) => s !== sub))
          expect(output).not.toContain(`chronomad log ${other}`);
        expect(output).toMatch(/--data-dir D/);
      }
    }
    // The real command: usage on stdout, nothing on stderr.
    const child = spawnSync(process.execPath, [BIN, "log", "inspect", "--help"], { encoding: "utf8" });
    expect(child.status).toBe(0);
    expect(child.stdout).toContain("chronomad log inspect");
    expect(child.stderr).toBe("");
  });

  it.runIf(brokers)("counts the records of a Kafka log", async () => {
    const topic = `chronomad-log-inspect-${randomUUID()}`;
    const url = `kafka://${brokers}/${topic}`;
    const events = [...mixedHistory(500, 9)];
    const log = await openKafkaLog(url);
    try {
      await log.append(events.map((e) => codec.encode(e)));
      const { code, output } = await run(["inspect", "--log", url, "--json"]);
      expect(code, output).toBe(0);
      expect(JSON.parse(output)).toEqual({
        records: 500,
        firstIndex: 1,
        lastIndex: 500,
        types: countTypes(events),
      });
      const missing = await run(["inspect", "--log", `kafka://${brokers}/${topic}-nope`]);
      expect(missing.code).toBe(2);
      expect(missing.output).toMatch(/does not exist/);
    } finally {
      await log.close();
      const admin = new Kafka({ brokers: brokers!.split(","), logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      await admin.disconnect();
    }
  });
});
