import { appendFile, open, readFile, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LogError, type LogRecord } from "../../src/log/event-log.ts";
import {
  type FileLog,
  type FileLogOptions,
  openFileLog,
  repairFileLog,
  verifyFileLog,
} from "../../src/log/file/index.ts";
import { frameOffsets, hashDir, segmentNames } from "./segment-bytes.ts";
import { tempDirs } from "./temp-dirs.ts";

const dirs = tempDirs("file-log-corrupt");
afterAll(() => dirs.cleanup());

const enc = new TextEncoder();
const dec = new TextDecoder();
const record = (i: number) => enc.encode(`event ${i} ${"-".repeat(60 + (i % 40))}`);

/** A closed log of `count` records over many 4 KiB segments. */
async function makeLog(count: number): Promise<string> {
  const dir = await dirs.make();
  const log = await openFileLog(dir, { segmentBytes: 4096 });
  for (let i = 1; i <= count; i += 5) await log.append([1, 2, 3, 4, 5].map((k) => record(i + k - 1)));
  await log.close();
  return dir;
}

async function readAllOf(log: FileLog): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const b of log.read(1)) out.push(...b);
  return out;
}

/** Where a segment's records start: its first index and the byte offset of each frame. */
async function framesOf(dir: string, name: string) {
  const bytes = await readFile(join(dir, name));
  return { path: join(dir, name), first: Number(name.slice(0, 20)), offsets: frameOffsets(bytes), bytes };
}

async function flipByte(path: string, offset: number): Promise<void> {
  const fh = await open(path, "r+");
  try {
    const b = Buffer.alloc(1);
    await fh.read(b, 0, 1, offset);
    b[0] = b[0]! ^ 0x5a;
    await fh.write(b, 0, 1, offset);
  } finally {
    await fh.close();
  }
}

async function openError(dir: string, options: FileLogOptions = {}): Promise<LogError> {
  const err = await openFileLog(dir, options).then(
    async (log) => {
      await log.close();
      throw new Error("open() accepted a corrupt log");
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LogError);
  return err as LogError;
}

describe("file log corruption", () => {
  it("finds a damaged record in a sealed segment when it is read, and with verifyOnOpen full refuses it, changes nothing, and can be repaired before it", async () => {
    const dir = await makeLog(300);
    const names = await segmentNames(dir);
    expect(names.length).toBeGreaterThan(4);
    const seg = await framesOf(dir, names[2]!);
    const frame = seg.offsets[5]!;
    const damagedIndex = seg.first + 5;
    const payloadLength = seg.bytes.readUInt32LE(frame);
    await flipByte(seg.path, frame + 8 + Math.floor(payloadLength / 2));

    const before = await hashDir(dir);
    // A default open reads sealed segments' index files, not their records:
    // the damage is reported by the read that reaches it.
    const opened = await openFileLog(dir);
    try {
      expect(opened.lastIndex()).toBe(300);
      await expect(readAllOf(opened)).rejects.toThrow(`${seg.path} at byte offset ${frame}`);
    } finally {
      await opened.close();
    }
    expect(await hashDir(dir)).toEqual(before);
    const err = await openError(dir, { verifyOnOpen: "full" });
    expect(err.code).toBe("corrupt");
    expect(err.message).toContain(seg.path);
    expect(err.message).toContain(`byte offset ${frame}`);
    expect(await hashDir(dir)).toEqual(before);

    const report = await verifyFileLog(dir);
    expect(report.healthy).toBe(false);
    expect(report.problem).toMatchObject({
      kind: "corrupt",
      file: seg.path,
      offset: frame,
      index: damagedIndex,
    });
    expect(report.lastIndex).toBe(damagedIndex - 1);
    expect(await hashDir(dir)).toEqual(before);

    // A repair that would keep the damaged record is refused, and changes nothing.
    await expect(repairFileLog(dir, damagedIndex)).rejects.toMatchObject({ code: "corrupt" });
    expect(await hashDir(dir)).toEqual(before);

    const repaired = await repairFileLog(dir, damagedIndex - 1);
    expect(repaired.lastIndex).toBe(damagedIndex - 1);
    expect(repaired.removedSegments.length).toBe(names.length - 3);
    const log = await openFileLog(dir);
    try {
      expect(log.lastIndex()).toBe(damagedIndex - 1);
      const all = await readAllOf(log);
      expect(all.map((r) => dec.decode(r.bytes))).toEqual(
        Array.from({ length: damagedIndex - 1 }, (_, i) => dec.decode(record(i + 1))),
      );
      expect(await log.append([record(damagedIndex)])).toEqual({ first: damagedIndex, last: damagedIndex });
    } finally {
      await log.close();
    }
    expect((await verifyFileLog(dir)).problem).toBeUndefined();
  });

  it('with verifyOnOpen "structure", opens past a damaged payload in a sealed segment but refuses to read it', async () => {
    const dir = await makeLog(300);
    const names = await segmentNames(dir);
    const seg = await framesOf(dir, names[1]!);
    const frame = seg.offsets[3]!;
    await flipByte(seg.path, frame + 12);
    await expect(openError(dir, { verifyOnOpen: "full" })).resolves.toMatchObject({ code: "corrupt" });
    const log = await openFileLog(dir, { verifyOnOpen: "structure" });
    try {
      expect(log.lastIndex()).toBe(300);
      await expect(readAllOf(log)).rejects.toThrow(`${seg.path} at byte offset ${frame}`);
      const after: LogRecord[] = [];
      for await (const b of log.read(seg.first + 4)) after.push(...b);
      expect(after.length).toBe(300 - seg.first - 3);
    } finally {
      await log.close();
    }
  });

  it("refuses damage in the middle of the last segment rather than cutting acknowledged records", async () => {
    for (const target of ["payload", "length"] as const) {
      const dir = await makeLog(120);
      const names = await segmentNames(dir);
      const seg = await framesOf(dir, names[names.length - 1]!);
      expect(seg.offsets.length).toBeGreaterThan(4);
      const frame = seg.offsets[2]!;
      // A damaged length makes the frame look like it runs past the end of the
      // file, exactly like a torn write; the valid frames after it tell them apart.
      await flipByte(seg.path, target === "payload" ? frame + 12 : frame + 3);
      const before = await hashDir(dir);
      const err = await openError(dir);
      expect(err.code).toBe("corrupt");
      expect(err.message).toContain(`${seg.path} at byte offset ${frame}`);
      expect(await hashDir(dir)).toEqual(before);
    }
  });

  it("refuses a missing segment in the middle of the log", async () => {
    const dir = await makeLog(200);
    const names = await segmentNames(dir);
    const { rm } = await import("node:fs/promises");
    await rm(join(dir, names[1]!));
    const err = await openError(dir);
    expect(err.code).toBe("corrupt");
    expect(err.message).toContain(join(dir, names[2]!));
    expect((await verifyFileLog(dir)).problem?.kind).toBe("corrupt");
  });

  it("cuts a torn tail on open and keeps every complete record", async () => {
    const cases = {
      "cut mid-frame": async (path: string, end: number) => truncate(path, end - 7),
      "cut mid-frame-header": async (path: string, _end: number, lastFrame: number) =>
        truncate(path, lastFrame + 5),
      "zeros appended": async (path: string) => appendFile(path, Buffer.alloc(8192)),
      "cut, then zeros": async (path: string, end: number) => {
        await truncate(path, end - 30);
        await appendFile(path, Buffer.alloc(5000));
      },
      "garbage in the last frame": async (path: string, end: number) => flipByte(path, end - 3),
    };
    for (const [name, damage] of Object.entries(cases)) {
      const dir = await makeLog(100);
      const names = await segmentNames(dir);
      const seg = await framesOf(dir, names[names.length - 1]!);
      const lastFrame = seg.offsets[seg.offsets.length - 1]!;
      const total = 100;
      const zeroFilled = name === "zeros appended";
      await damage(seg.path, seg.bytes.length, lastFrame);
      const keep = zeroFilled ? total : total - 1;

      const verified = await verifyFileLog(dir);
      expect(verified.healthy, name).toBe(true);
      expect(verified.problem?.kind, name).toBe("torn-tail");
      expect(verified.lastIndex, name).toBe(keep);

      const warnings: object[] = [];
      const log = await openFileLog(dir, { logger: { warn: (obj) => warnings.push(obj) } });
      try {
        expect(warnings.length, name).toBe(1);
        expect(log.lastIndex(), name).toBe(keep);
        const all = await readAllOf(log);
        expect(all.map((r) => dec.decode(r.bytes))).toEqual(
          Array.from({ length: keep }, (_, i) => dec.decode(record(i + 1))),
        );
        expect(await log.append([record(keep + 1)])).toEqual({ first: keep + 1, last: keep + 1 });
      } finally {
        await log.close();
      }
      const healed = await verifyFileLog(dir);
      expect(healed.problem, name).toBeUndefined();
      expect(healed.lastIndex, name).toBe(keep + 1);
    }
  });

  it("removes a last segment whose header never reached the disk", async () => {
    const dir = await makeLog(60);
    const names = await segmentNames(dir);
    const lastIndex =
      Number(names[names.length - 1]!.slice(0, 20)) + (await framesOf(dir, names.at(-1)!)).offsets.length - 1;
    const next = String(lastIndex + 1).padStart(20, "0");
    await writeFile(join(dir, `${next}.seg`), Buffer.from("CMLOG"));
    const log = await openFileLog(dir);
    try {
      expect(log.lastIndex()).toBe(lastIndex);
      expect(await segmentNames(dir)).toEqual(names);
    } finally {
      await log.close();
    }
  });
});
