import { fork } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { LoadCall, LoadJob, LoadResult } from "./http-load-worker.ts";

/** The worker is TypeScript too: it loads through tsx's loader, as the CLI does. */
const BOOTSTRAP = `
const { workerData } = require("node:worker_threads");
import(workerData.tsx).then((tsx) => { tsx.register(); return import(workerData.entry); });
`;
const WORKER_ENTRY = new URL("./http-load-worker.ts", import.meta.url).href;

/** tsx's ESM `register` entry, found through its package exports (test runners lack import.meta.resolve). */
function tsxLoaderApi(): string {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve("tsx/package.json");
  const exports = (require(manifest) as { exports: Record<string, { import: { default: string } }> }).exports;
  return pathToFileURL(join(dirname(manifest), exports["./esm/api"]!.import.default)).href;
}

/**
 * Sends `calls` to the server at `url` from a worker thread (so the load
 * does not share the server's event loop): each once, or round-robin for
 * `durationMs` after `warmupMs`. Throws if any request failed.
 */
export async function load(
  url: string,
  calls: readonly LoadCall[],
  options: { concurrency: number; durationMs?: number; warmupMs?: number },
): Promise<LoadResult> {
  const job: LoadJob = {
    url,
    calls,
    concurrency: options.concurrency,
    durationMs: options.durationMs ?? 0,
    warmupMs: options.warmupMs ?? 0,
  };
  const worker = new Worker(BOOTSTRAP, {
    eval: true,
    workerData: {
      ...job,
      tsx: tsxLoaderApi(),
      entry: WORKER_ENTRY,
    },
  });
  try {
    const result = await new Promise<LoadResult & { error?: string }>((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
    });
    if (result.error) throw new Error(`load worker failed: ${result.error}`);
    if (result.errors > 0) throw new Error(`${result.errors} requests failed, first: ${result.firstError}`);
    return result;
  } finally {
    await worker.terminate();
  }
}

/**
 * The same as `load`, from a child process: the server's process then does
 * nothing but serve, so its process.cpuUsage() over the run is the cost of
 * the calls.
 */
export async function loadFromProcess(
  url: string,
  calls: readonly LoadCall[],
  options: { concurrency: number },
): Promise<LoadResult> {
  const job: LoadJob = { url, calls, concurrency: options.concurrency, durationMs: 0, warmupMs: 0 };
  const child = fork(fileURLToPath(WORKER_ENTRY), ["--http-load-process"], {
    // tsx is resolved from the project's root.
    cwd: join(import.meta.dirname, "../.."),
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    // The latencies are a Float64Array: structured clone keeps it one.
    serialization: "advanced",
  });
  const result = await new Promise<LoadResult & { error?: string }>((resolve, reject) => {
    let settled = false;
    child.on("message", (m: { result?: LoadResult; error?: string }) => {
      settled = true;
      if (m.error !== undefined) reject(new Error(`load process failed: ${m.error}`));
      else resolve(m.result!);
    });
    child.on("exit", (code) => {
      if (!settled) reject(new Error(`load process exited with ${code}`));
    });
    child.send(job);
  });
  if (result.errors > 0) throw new Error(`${result.errors} requests failed, first: ${result.firstError}`);
  return result;
}
