import { spawn } from "node:child_process";
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { mixedHistory } from "../../src/bench/mixed-history.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { openFileLog } from "../../src/log/file/index.ts";
import { openLog } from "../../src/log/open-log.ts";
import { allSchemas } from "../../streams/index.ts";
import { useTempDirs } from "../store/helpers.ts";

const BIN = join(import.meta.dirname, "../../bin/chronomad.js");
const RECORDS = 1_000_000;
const brokers = process.env.KAFKA_BROKERS;

function run(args: string[]) {
  const child = spawn(process.execPath, [BIN, "replay", ...args], { stdio: ["ignore", "pipe", "pipe"] });
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

async function dirBytes(dir: string): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  let total = 0;
  for (const n of names) total += (await stat(join(dir, n)).catch(() => ({ size: 0 }))).size;
  return total;
}

async function lastIndexOf(url: string): Promise<number> {
  const log = await openLog(url, { logger: pino({ level: "silent" }) });
  const last = log.lastIndex();
  await log.close();
  return last;
}

describe("chronomad replay", () => {
  const tempDir = useTempDirs();

  const sourceLog = async () => {
    const dir = join(await tempDir(), "source");
    const codec = new EnvelopeCodec(allSchemas);
    const log = await openFileLog(dir, { fsync: "never" });
    let batch: Uint8Array[] = [];
    for (const e of mixedHistory(RECORDS, 5)) {
      batch.push(codec.encode(e));
      if (batch.length === 10_000) {
        await log.append(batch);
        batch = [];
      }
    }
    if (batch.length) await log.append(batch);
    await log.close();
    return `file:${dir}`;
  };

  /**
   * Starts a copy, kills it once it has written part of the history, then
   * runs it again to the end. `written` tells how far the copy got without
   * opening the target under the running copy.
   */
  const interruptedCopy = async (from: string, to: string, written: () => Promise<boolean>) => {
    const first = run(["--from", from, "--to", to]);
    const exitedEarly = await Promise.race([
      first.exited.then(() => true),
      (async () => {
        while (!(await written())) await new Promise((r) => setTimeout(r, 2));
        return false;
      })(),
    ]);
    first.child.kill("SIGKILL");
    await first.exited;
    const killedAt = await lastIndexOf(to);
    const second = run(["--from", from, "--to", to, "--verify"]);
    expect(await second.exited, second.output()).toBe(0);
    return { killedAt, exitedEarly, output: second.output() };
  };

  it("copies a 1,000,000-event file log into a fresh file log, resuming after a kill, with equal hashes", async () => {
    const from = await sourceLog();
    const targetDir = join(await tempDir(), "target");
    const to = `file:${targetDir}`;
    const sourceBytes = await dirBytes(from.slice("file:".length));
    const { killedAt, exitedEarly, output } = await interruptedCopy(
      from,
      to,
      async () => (await dirBytes(targetDir)) > sourceBytes / 5,
    );
    expect(exitedEarly).toBe(false);
    expect(killedAt).toBeGreaterThan(0);
    expect(killedAt).toBeLessThan(RECORDS);
    expect(output).toMatch(new RegExp(`resuming after index ${killedAt}`));
    expect(output).toMatch(/verify: equal/);
    expect(await lastIndexOf(to)).toBe(RECORDS);
  });

  it.runIf(brokers)(
    "copies a 1,000,000-event file log into Kafka, resuming after a kill, with equal hashes",
    async () => {
      const from = await sourceLog();
      const to = `kafka://${brokers}/chronomad-replay-${Date.now()}`;
      const started = Date.now();
      // Kafka cannot be looked at without a client of its own; part of the expected copy time will do.
      const { output } = await interruptedCopy(from, to, async () => Date.now() - started > 4000);
      expect(output).toMatch(/verify: equal/);
      expect(await lastIndexOf(to)).toBe(RECORDS);
    },
  );

  it("refuses a target that is not a copy of the source, and bad arguments", async () => {
    const dir = await tempDir();
    const codec = new EnvelopeCodec(allSchemas);
    const a = await openFileLog(join(dir, "a"), { fsync: "never" });
    const b = await openFileLog(join(dir, "b"), { fsync: "never" });
    const history = [...mixedHistory(20, 1)].map((e) => codec.encode(e));
    await a.append(history);
    await b.append(
      [...mixedHistory(5, 2)]
        .map((e) => codec.encode(e))
        .slice(1)
        .concat(history.slice(0, 1)),
    );
    await a.close();
    await b.close();
    const refused = run(["--from", `file:${join(dir, "a")}`, "--to", `file:${join(dir, "b")}`]);
    expect(await refused.exited).toBe(1);
    expect(refused.output()).toMatch(/not a copy of it/);
    const usage = run(["--from", "memory:"]);
    expect(await usage.exited).toBe(2);
    expect(usage.output()).toMatch(/--from and --to are required/);
  });
});

if (!brokers) {
  process.stderr.write(
    "replay into Kafka skipped: KAFKA_BROKERS is not set (bash .ci/run starts a broker)\n",
  );
}
