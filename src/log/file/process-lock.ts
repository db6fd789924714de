import { open, readFile, unlink, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { LogError } from "../event-log.ts";

const LOCK = "LOCK";

/**
 * Claims a log directory for this process with a LOCK file holding its pid.
 * Node has no flock, and two processes appending to (or one repairing) the
 * same segments would corrupt them. A lock left by a process that is gone
 * (killed, crashed) is taken over. Resolves with the release function.
 */
export async function lockLogDirectory(dir: string): Promise<() => Promise<void>> {
  const path = join(dir, LOCK);
  const mine = `${process.pid} ${hostname()}\n`;
  try {
    const fh = await open(path, "wx");
    await fh.writeFile(mine);
    await fh.close();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    const holder = await lockHolder(dir);
    if (holder !== undefined && holder !== process.pid && isAlive(holder)) {
      throw new LogError(
        `file log ${dir} is in use by process ${holder} (${path}); stop it first, or delete the lock file if that process is not a chronomad`,
        "config",
      );
    }
    await writeFile(path, mine);
  }
  return async () => {
    if ((await lockHolder(dir)) === process.pid) await unlink(path).catch(() => undefined);
  };
}

/** The pid that holds the directory's lock, if any. */
export async function lockHolder(dir: string): Promise<number | undefined> {
  try {
    const pid = Number.parseInt(await readFile(join(dir, LOCK), "utf8"), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** Whether a live process (other than this one) holds the directory. */
export async function lockedByAnother(dir: string): Promise<number | undefined> {
  const holder = await lockHolder(dir);
  return holder !== undefined && holder !== process.pid && isAlive(holder) ? holder : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
