import { join } from "node:path";
import { claimPidLock, isAlive, pidLockHolder } from "../../util/pid-lock.ts";
import { LogError } from "../event-log.ts";

const LOCK = "LOCK";

/**
 * Claims a log directory for this process with a LOCK file holding its pid:
 * two processes appending to (or one repairing) the same segments would
 * corrupt them. Resolves with the release function.
 */
export function lockLogDirectory(dir: string): Promise<() => Promise<void>> {
  const path = join(dir, LOCK);
  return claimPidLock(
    path,
    (holder) =>
      new LogError(
        `file log ${dir} is in use by process ${holder} (${path}); stop it first, or delete the lock file if that process is not a chronomad`,
        "config",
      ),
  );
}

/** Whether a live process (other than this one) holds the directory. */
export async function lockedByAnother(dir: string): Promise<number | undefined> {
  const holder = await lockHolder(dir);
  return holder !== undefined && holder !== process.pid && isAlive(holder) ? holder : undefined;
}

/** The pid that holds the directory's lock, if any. */
export function lockHolder(dir: string): Promise<number | undefined> {
  return pidLockHolder(join(dir, LOCK));
}
