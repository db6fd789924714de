import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import type { LogRecord } from "../../src/log/event-log.ts";
import { openFileLog, verifyFileLog } from "../../src/log/file/index.ts";
import { crashBatchSize, crashPayload } from "./fixtures/crash-payload.ts";
import { tempDirs } from "./temp-dirs.ts";

const dirs = tempDirs("file-log-crash");
afterAll(() => dirs.cleanup());

const fixture = fileURLToPath(new URL("./fixtures/crash-appender.ts", import.meta.url));
const projectRoot = fileURLToPath(new URL("../..", import.meta.url));

interface Acked {
  readonly first: number;
  readonly last: number;
  readonly id: string;
}

/**
 * Runs the appender until it has reported `killAfter` resolved appends, then
 * SIGKILLs it mid-stream. Returns every append it reported as resolved.
 */
async function runAndKill(dir: string, round: number, killAfter: number): Promise<Acked[]> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", fixture, dir, String(round)], {
    cwd: projectRoot,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const acked: Acked[] = [];
  let partial = "";
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on("exit", (_code, signal) => resolve(signal)),
  );
  child.stdout!.on("data", (d: Buffer) => {
    const lines = (partial + d.toString()).split("\n");
    // A line cut by the kill has no newline yet: it is not a report.
    partial = lines.pop()!;
    for (const line of lines) {
      if (line.startsWith("ready")) continue;
      const [first, last, id] = line.split(" ");
      acked.push({ first: Number(first), last: Number(last), id: id! });
    }
    if (acked.length >= killAfter && child.exitCode === null && !child.killed) child.kill("SIGKILL");
  });
  const signal = await exited;
  if (signal !== "SIGKILL") throw new Error(`appender exited on its own (${signal}): ${stderr}`);
  return acked;
}

async function readAll(dir: string): Promise<{ records: LogRecord[]; lastIndex: number }> {
  const log = await openFileLog(dir);
  try {
    const records: LogRecord[] = [];
    for await (const batch of log.read(1))
      for (const r of batch) records.push({ index: r.index, bytes: Buffer.from(r.bytes) });
    return { records, lastIndex: log.lastIndex() };
  } finally {
    await log.close();
  }
}

const dec = new TextDecoder();

describe("file log crash recovery", () => {
  it("keeps every acknowledged append, whole and in order, across repeated SIGKILLs", async () => {
    const dir = await dirs.make();
    const allAcked: Acked[] = [];
    for (let round = 1; round <= 4; round++) {
      const acked = await runAndKill(dir, round, 1500 + round * 700);
      expect(acked.length).toBeGreaterThan(0);
      allAcked.push(...acked);

      const { records, lastIndex } = await readAll(dir);
      // Dense from 1, and every record is one the appender meant to write, whole.
      expect(records.length).toBe(lastIndex);
      expect(records.every((r, i) => r.index === i + 1)).toBe(true);
      for (const r of records) {
        const head = dec.decode(r.bytes.subarray(0, Math.min(40, r.bytes.length))).split("|")[0]!;
        const [id, k] = head.split("/");
        expect(Buffer.from(r.bytes).equals(Buffer.from(crashPayload(id!, Number(k))))).toBe(true);
      }
      // Every resolved append is there, at the range it was given.
      for (const a of allAcked) {
        expect(a.last).toBeLessThanOrEqual(lastIndex);
        const seq = Number(a.id.slice(a.id.indexOf("s") + 1));
        expect(a.last - a.first + 1).toBe(crashBatchSize(seq));
        for (let i = a.first; i <= a.last; i++) {
          expect(
            Buffer.from(records[i - 1]!.bytes).equals(Buffer.from(crashPayload(a.id, i - a.first))),
          ).toBe(true);
        }
      }
      // Each writer's appends resolved in the order it made them.
      const byWriter = new Map<string, number>();
      for (const a of acked) {
        const writer = a.id.slice(0, a.id.indexOf("s"));
        expect(a.first).toBeGreaterThan(byWriter.get(writer) ?? 0);
        byWriter.set(writer, a.last);
      }
      const report = await verifyFileLog(dir);
      expect(report.problem).toBeUndefined();
      expect(report.lastIndex).toBe(lastIndex);
    }
  });
});
