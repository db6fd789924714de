import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
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
