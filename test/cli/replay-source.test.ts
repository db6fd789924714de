import { spawn } from "node:child_process";
import { mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { LogRecord } from "../../src/log/event-log.ts";
import { openFileLog } from "../../src/log/file/index.ts";
import { lockHolder } from "../../src/log/file/process-lock.ts";
import { openLog } from "../../src/log/open-log.ts";
import { startTestServer } from "../server-harness.ts";
import { useTempDirs } from "../store/helpers.ts";

const BIN = join(import.meta.dirname, "../../bin/chronomad.js");
const brokers = process.env.KAFKA_BROKERS;

function replay(args: string[]) {
  const child = spawn(process.execPath, [BIN, "replay", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => {
    stdout += String(d);
  });
  child.stderr.on("data", (d) => {
    stderr += String(d);
  });
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("exit", (code) => resolve({ code, stdout, stderr })),
  );
}

async function recordsOf(url: string, until: number): Promise<LogRecord[]> {
  const log = await openLog(url, { logger: pino({ level: "silent" }), readOnly: true });
  try {
    const out: LogRecord[] = [];
    for await (const batch of log.read(1, { untilIndex: until }))
      for (const r of batch) out.push({ index: r.index, bytes: Buffer.from(r.bytes) });
    return out;
  } finally {
    await log.close();
  }
}

describe("chronomad replay: its source", () => {
  const tempDir = useTempDirs();

  it("copies a file log that a running server holds and keeps writing to, without its lock", async () => {
    const server = await startTestServer({ dataDir: await tempDir() });
    try {
      const logDir = join(server.dataDir, "log");
      for (let i = 0; i < 30; i++) {
        expect((await server.call(`/v1/namespace/before-${i}`, { method: "PUT", body: "{}" })).status).toBe(
          200,
        );
      }
      expect(await lockHolder(logDir)).toBe(process.pid);
      const heldAtStart = server.log.lastIndex();
      // The server goes on writing while the copy runs.
      let writing = true;
      const writes = (async () => {
        for (let i = 0; writing; i++)
          await server.call(`/v1/namespace/during-${i}`, { method: "PUT", body: "{}" });
      })();
      const to = `file:${join(await tempDir(), "copy")}`;
      const run = await replay(["--from", `file:${logDir}`, "--to", to, "--verify"]);
      writing = false;
      await writes;
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toMatch(/verify: equal/);

      const copied = await openLog(to, { logger: pino({ level: "silent" }), readOnly: true });
      const copiedTo = copied.lastIndex();
      await copied.close();
      expect(copiedTo).toBeGreaterThanOrEqual(heldAtStart);
      expect(copiedTo).toBeLessThanOrEqual(server.log.lastIndex());
      // Record for record the source's prefix.
      const [a, b] = [await recordsOf(`file:${logDir}`, copiedTo), await recordsOf(to, copiedTo)];
      expect(b.length).toBe(copiedTo);
      expect(b).toEqual(a);
      // The server still holds its log and can write to it.
      expect(await lockHolder(logDir)).toBe(process.pid);
      expect((await server.call("/v1/namespace/after", { method: "PUT", body: "{}" })).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  it("refuses a source that does not exist or holds nothing, creating nothing, and says so", async () => {
    const dir = await tempDir();
    const typo = join(dir, "typo", "dir");
    const missing = await replay(["--from", `file:${typo}`, "--to", `file:${join(dir, "to")}`]);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain(typo);
    expect(missing.stdout).toMatch(/does not exist/);
    expect(await readdir(dir)).toEqual([]);

    await mkdir(join(dir, "empty"));
    const empty = await replay(["--from", `file:${join(dir, "empty")}`, "--to", `file:${join(dir, "to")}`]);
    expect(empty.code).toBe(1);
    expect(empty.stdout).toMatch(/holds no segment files/);
    expect(await readdir(dir)).toEqual(["empty"]);

    const same = await replay([
      "--from",
      `file:${join(dir, "a")}`,
      "--to",
      `file:${join(dir, "b", "..", "a")}`,
    ]);
    expect(same.code).toBe(2);
    expect(same.stdout).toMatch(/name the same log/);
  });

  it("refuses an --until-index past the source's end, copying nothing", async () => {
    const dir = await tempDir();
    const source = await openFileLog(join(dir, "source"), { fsync: "never" });
    await source.append([Buffer.from("a"), Buffer.from("b"), Buffer.from("c")]);
    await source.close();
    const past = await replay([
      "--from",
      `file:${join(dir, "source")}`,
      "--to",
      `file:${join(dir, "to")}`,
      "--until-index",
      "4",
    ]);
    expect(past.code).toBe(1);
    expect(past.stdout).toMatch(/--until-index 4 is past the end of the source .* which ends at index 3/);
    expect(await readdir(dir)).toEqual(["source"]);
  });

  it.runIf(brokers)("refuses a Kafka topic that does not exist, without creating it", async () => {
    const topic = `chronomad-replay-missing-${Date.now()}`;
    const dir = await tempDir();
    const run = await replay(["--from", `kafka://${brokers}/${topic}`, "--to", `file:${join(dir, "to")}`]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(new RegExp(`topic ${topic} does not exist`));
    const { Kafka } = await import("kafkajs");
    const admin = new Kafka({ brokers: brokers!.split(","), logLevel: 0 }).admin();
    await admin.connect();
    try {
      expect(await admin.listTopics()).not.toContain(topic);
    } finally {
      await admin.disconnect();
    }
  });
});

if (!brokers) {
  process.stderr.write("replay from a missing Kafka topic skipped: KAFKA_BROKERS is not set\n");
}
