import { fork } from "node:child_process";
import { join } from "node:path";
import { NODE_FLAGS } from "../cli/node-flags.ts";

const ROOT = join(import.meta.dirname, "../..");
const ENTRY = join(import.meta.dirname, "fresh-process-entry.ts");

/** What the child is asked to run: `exported` of `module` (a path under src/bench), with `args`. */
export interface FreshCall {
  readonly module: string;
  readonly exported: string;
  readonly args: readonly unknown[];
  /** Where in `args` the child puts a progress callback that writes to stderr. */
  readonly progressAt?: number;
  readonly label: string;
}

/**
 * Runs one benchmark part in a new process with the server's V8 flags, and
 * resolves with what it returns. A replay or a million-row apply measured in
 * the process that just ran other parts would carry their heap with it; a
 * server that restarts, or holds a million evaluations, does not.
 */
export function inFreshProcess<T>(call: FreshCall, flags: readonly string[] = []): Promise<T> {
  const child = fork(ENTRY, [], {
    cwd: ROOT,
    execArgv: [...NODE_FLAGS, ...flags, "--max-old-space-size=8192", "--import", "tsx"],
    env: { ...process.env, MSGPACKR_NATIVE_ACCELERATION_DISABLED: "true" },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    child.on("message", (m: { value?: T; error?: string }) => {
      settled = true;
      if (m.error !== undefined) reject(new Error(`${call.label}: ${m.error}`));
      else resolve(m.value as T);
    });
    child.on("exit", (code) => {
      if (!settled) reject(new Error(`${call.label}: the benchmark process exited with ${code}`));
    });
    child.send(call);
  });
}
