import { open, readFile } from "node:fs/promises";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { runLogCommand } from "../../src/cli/log-command.ts";
import { openFileLog } from "../../src/log/file/index.ts";
import { frameOffsets, segmentNames } from "./segment-bytes.ts";
import { tempDirs } from "./temp-dirs.ts";

const dirs = tempDirs("log-command");
afterAll(() => dirs.cleanup());

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

/** A data dir whose log (D/log) holds 200 records over several segments. */
async function makeDataDir(): Promise<string> {
  const dataDir = await dirs.make();
  const log = await openFileLog(join(dataDir, "log"), { segmentBytes: 2048 });
  for (let i = 0; i < 40; i++)
    await log.append(
      Array.from({ length: 5 }, (_, k) => new TextEncoder().encode(`e${i}-${k}-padding-padding`)),
    );
  await log.close();
  return dataDir;
}

describe("chronomad log", () => {
  it("verify exits 0 on a healthy log, 1 on a corrupt one; repair exits 0 and heals it", async () => {
    const dataDir = await makeDataDir();
    const logDir = join(dataDir, "log");
    const healthy = await run(["verify", "--data-dir", dataDir]);
    expect(healthy.code).toBe(0);
    expect(healthy.output).toMatch(/records: 200/);
    expect(healthy.output).toMatch(/^OK/m);
    expect((await run(["verify", `--log=file:${logDir}`])).code).toBe(0);

    const names = await segmentNames(logDir);
    const victim = join(logDir, names[1]!);
    const frame = frameOffsets(await readFile(victim))[1]!;
    const fh = await open(victim, "r+");
    await fh.write(Buffer.from([0xff, 0xee]), 0, 2, frame + 10);
    await fh.close();

    const corrupt = await run(["verify", "--log", `file:${logDir}`]);
    expect(corrupt.code).toBe(1);
    expect(corrupt.output).toContain(`CORRUPT: ${victim} at byte offset ${frame}`);
    const safe = Number(/--truncate-after (\d+)/.exec(corrupt.output)![1]);

    expect((await run(["repair", "--truncate-after", String(safe + 5), "--data-dir", dataDir])).code).toBe(1);
    const repaired = await run(["repair", "--truncate-after", String(safe), "--data-dir", dataDir]);
    expect(repaired.code).toBe(0);
    expect(repaired.output).toContain(`the last index is now ${safe}`);
    const after = await run(["verify", "--data-dir", dataDir]);
    expect(after.code).toBe(0);
    expect(after.output).toContain(`records: ${safe}`);
  });

  it("exits 2 on usage errors and on a missing log directory", async () => {
    const missing = join(await dirs.make(), "nope");
    for (const args of [
      [],
      ["frobnicate"],
      ["verify", "--bogus"],
      ["verify", "--data-dir"],
      ["verify", "--data-dir", "a", "--log", "file:b"],
      ["verify", "--log", "kafka://localhost:9092/events"],
      ["verify", "--truncate-after", "3"],
      ["repair", "--log", "file:x"],
      ["repair", "--truncate-after", "-1", "--log", "file:x"],
      ["repair", "--truncate-after", "ten", "--log", "file:x"],
      ["verify", "--log", `file:${missing}`],
    ]) {
      const { code, output } = await run(args);
      expect(code, args.join(" ")).toBe(2);
      expect(output.length).toBeGreaterThan(0);
    }
  });
});
