import { readFileSync } from "node:fs";

/**
 * The main thread's CPU time (user + system, µs) from Linux's per-thread
 * stat (the main thread's id is the process's); NaN where there is none.
 * process.cpuUsage counts the scheduler and log threads too.
 */
export function mainThreadCpuUs(): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
  } catch {
    return Number.NaN;
  }
  // After the command name, in parentheses: state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Linux reports them in USER_HZ, 100 a second on every architecture Node runs on.
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/**
 * How long the main thread has waited on a run queue, runnable but not
 * running (µs, from Linux's schedstat); NaN where there is none. On a
 * shared machine this is where a busy loop's latency goes besides its own
 * CPU: a thread it wakes (a scheduler thread, the thread pool, a client on
 * the same cores) may take its core at once.
 */
export function mainThreadRunqueueWaitUs(): number {
  try {
    const fields = readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ");
    return Number(fields[1]) / 1000;
  } catch {
    return Number.NaN;
  }
}

/** For profiles (--cpu-prof): now on the profiler's monotonic clock, in µs. */
export function profilerClockUs(): bigint {
  return process.hrtime.bigint() / 1000n;
}
