import { open, readFile, unlink, writeFile } from "node:fs/promises";
import { hostname } from "node:os";

/**
 * Claims `path` for this process by writing its pid there (created
 * exclusively). Node has no flock; a lock whose process is gone (killed,
 * crashed) is taken over. Throws `refuse(pid)` when a live process holds
 * it. Resolves with the release function.
 */
export async function claimPidLock(
  path: string,
  refuse: (holder: number) => Error,
): Promise<() => Promise<void>> {
  const mine = `${process.pid} ${hostname()}\n`;
  try {
    const fh = await open(path, "wx");
    await fh.writeFile(mine);
    await fh.close();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    const holder = await pidLockHolder(path);
    if (holder !== undefined && holder !== process.pid && isAlive(holder)) throw refuse(holder);
    await writeFile(path, mine);
  }
  return async () => {
    if ((await pidLockHolder(path)) === process.pid) await unlink(path).catch(() => undefined);
  };
}

/** The pid written in a lock file, if any. */
export async function pidLockHolder(path: string): Promise<number | undefined> {
  try {
    const pid = Number.parseInt(await readFile(path, "utf8"), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
