import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker, type WorkerOptions } from "node:worker_threads";

/**
 * chronomad runs its TypeScript through tsx's loader (bin/chronomad.js);
 * a worker thread starts with no loader, so its entry registers tsx first
 * and then imports the real module (as src/bench/http-load.ts does).
 */
const BOOTSTRAP = `
const { workerData } = require("node:worker_threads");
import(workerData.tsx).then((tsx) => { tsx.register(); return import(workerData.entry); });
`;

/** tsx's ESM `register` entry, found through its package exports (test runners lack import.meta.resolve). */
function tsxLoaderApi(): string {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve("tsx/package.json");
  const exports = (require(manifest) as { exports: Record<string, { import: { default: string } }> }).exports;
  return pathToFileURL(join(dirname(manifest), exports["./esm/api"]!.import.default)).href;
}

let loader: string | undefined;

/** A worker thread running the TypeScript module at `entry` (a file URL), with `workerData` beside the loader's. */
export function startTypeScriptWorker(
  entry: URL,
  workerData: Record<string, unknown>,
  options: Omit<WorkerOptions, "eval" | "workerData"> = {},
): Worker {
  loader ??= tsxLoaderApi();
  return new Worker(BOOTSTRAP, {
    ...options,
    eval: true,
    workerData: { ...workerData, tsx: loader, entry: entry.href },
  });
}
