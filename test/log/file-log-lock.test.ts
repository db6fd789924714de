import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openFileLog, repairFileLog } from "../../src/log/file/index.ts";
import { useTempDirs } from "../store/helpers.ts";

describe("file log: one process at a time", () => {
  const tempDir = useTempDirs();

  it("refuses a second process, and takes over a lock left by a dead one", async () => {
    const dir = await tempDir();
    // Another process opens the log and keeps it open until told to stop.
    const holder = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "-e",
        `import("${join(import.meta.dirname, "../../src/log/file/index.ts")}").then(async (m) => {
           const log = await m.openFileLog(${JSON.stringify(dir)});
           process.stdout.write("open\\n");
           process.stdin.once("data", async () => { await log.close(); process.exit(0); });
         })`,
      ],
      { stdio: ["pipe", "pipe", "inherit"] },
    );
    await new Promise<void>((resolve) => holder.stdout!.once("data", () => resolve()));
    await expect(openFileLog(dir)).rejects.toThrow(new RegExp(`in use by process ${holder.pid}`));
    await expect(repairFileLog(dir, 0)).rejects.toThrow(/stop it before repairing/);
    holder.stdin!.write("stop\n");
    await new Promise((resolve) => holder.on("exit", resolve));
    expect(existsSync(join(dir, "LOCK"))).toBe(false);

    // A lock whose process is gone (a crash) does not keep the log closed.
    await writeFile(join(dir, "LOCK"), "999999999 elsewhere\n");
    const log = await openFileLog(dir);
    await log.append([new Uint8Array([1])]);
    await log.close();
    expect(existsSync(join(dir, "LOCK"))).toBe(false);
  });
});
