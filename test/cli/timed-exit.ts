import type { ServeProcess } from "./serve-process.ts";

export interface TimedExit {
  /** The exit code, or "hung" if the process was still running after `limitMs` (it is then SIGKILLed). */
  readonly code: number | null | "hung";
  readonly ms: number;
}

/**
 * Sends `signal` and waits for the process to exit, at most `limitMs`: a
 * server that hangs fails the test at once with its last log lines instead
 * of holding it until the test timeout.
 */
export async function signalAndTime(
  server: ServeProcess,
  limitMs: number,
  signal: NodeJS.Signals = "SIGTERM",
): Promise<TimedExit> {
  const t0 = performance.now();
  server.child.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<"hung">((resolve) => {
    timer = setTimeout(() => resolve("hung"), limitMs);
  });
  const code = await Promise.race([server.exited, hung]);
  clearTimeout(timer);
  const ms = performance.now() - t0;
  if (code === "hung") {
    server.child.kill("SIGKILL");
    await server.exited;
  }
  return { code, ms };
}

/** The last log lines, for a failure message. */
export function tail(server: ServeProcess, n = 15): string {
  return server.lines
    .slice(-n)
    .map((l) => JSON.stringify(l))
    .join("\n");
}
