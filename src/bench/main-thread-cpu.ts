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

/** For profiles (--cpu-prof): now on the profiler's monotonic clock, in µs. */
export function profilerClockUs(): bigint {
  return process.hrtime.bigint() / 1000n;
}
