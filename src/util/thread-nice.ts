import { getPriority, setPriority } from "node:os";

/**
 * Per-thread scheduling priority. Only on Linux, where a nice value belongs
 * to the calling thread (setpriority with who = 0 names the thread, not the
 * process); elsewhere the call would lower the whole process, so these do
 * nothing there.
 */
export function threadNice(): number {
  return process.platform === "linux" ? getPriority(0) : 0;
}

/**
 * Sets the calling thread's nice value and answers the value it has
 * afterwards. Raising the priority again (a smaller value) needs
 * CAP_SYS_NICE; without it the thread keeps the value it had, and the
 * error is the caller's to report.
 */
export function setThreadNice(nice: number): number {
  if (process.platform !== "linux") return 0;
  setPriority(0, nice);
  return getPriority(0);
}
