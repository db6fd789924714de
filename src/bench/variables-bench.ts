import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { activeRootKey, type RootKeyRow } from "../../projections/root-keys.ts";
import type { RunningServer } from "../server.ts";
import { decryptItems, encryptItems, type VariableItems } from "../variables/variable-crypto.ts";
import { startBenchServer } from "./bench-server.ts";
import { load } from "./http-load.ts";
import type { LoadCall } from "./http-load-worker.ts";
import { percentile } from "./percentile.ts";

export interface VariablesFigures {
  /** Distinct variable paths written and read, round robin. */
  readonly paths: number;
  /** Bytes of the items' JSON each variable holds. */
  readonly items_bytes: number;
  /** PUT /v1/var/<path> over keep-alive HTTP, 16 in flight: seal, append (fdatasync), apply, answer with the items. */
  readonly write_per_s: number;
  readonly write_p50_ms: number;
  readonly write_p99_ms: number;
  /** GET /v1/var/<path>, 16 in flight: lookup, open, answer. */
  readonly read_per_s: number;
  readonly read_p50_ms: number;
  readonly read_p99_ms: number;
  /** One AES-256-GCM seal / open of those items alone (median), in microseconds. */
  readonly encrypt_us: number;
  readonly decrypt_us: number;
}

export interface VariablesBenchOptions {
  readonly paths?: number;
  /** Measured time of each write or read run. */
  readonly durationMs?: number;
  readonly rounds?: number;
}

const CONCURRENCY = 16;

/** A realistic secret: a few credentials and a URL. */
function items(i: number): VariableItems {
  return {
    username: `svc-${i}`,
    password: `${"p".repeat(24)}${String(i).padStart(8, "0")}`,
    url: `postgres://db-${i % 16}.internal:5432/app`,
  };
}

const pathOf = (i: number) => `bench/app-${String(i).padStart(4, "0")}/config`;

async function start(dir: string): Promise<RunningServer> {
  return startBenchServer(["--data-dir", dir, "--shed-reads-after-lag", "0"]);
}

/** Median time of one call of `fn` over `n` calls, in microseconds (after a warm-up). */
function microseconds(n: number, fn: (i: number) => void): number {
  for (let i = 0; i < 2_000; i++) fn(i);
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    fn(i);
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return Math.round(samples[Math.floor(n / 2)]! * 1000 * 10) / 10;
}

/**
 * Variables over HTTP against a server in this process (file log, fdatasync
 * on, as a server runs by default): writes of 2,000 distinct paths round
 * robin, then reads of them, 16 requests in flight from a worker thread,
 * alternated three times (medians); and the seal and the open alone.
 */
export async function benchVariables(options: VariablesBenchOptions = {}): Promise<VariablesFigures> {
  const paths = options.paths ?? 2_000;
  const durationMs = options.durationMs ?? 3_000;
  const rounds = options.rounds ?? 3;
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-vars-"));
  const server = await start(dir);
  try {
    const url = `http://${server.address}`;
    const active = activeRootKey(server.store.table<RootKeyRow>("root_keys"));
    if (!active || !server.keyring.has(active.KeyID)) throw new Error("the bench server has no root key");
    const writes: LoadCall[] = [];
    const reads: LoadCall[] = [];
    for (let i = 0; i < paths; i++) {
      writes.push({
        method: "PUT",
        path: `/v1/var/${pathOf(i)}`,
        token: "",
        body: JSON.stringify({ Items: items(i) }),
      });
      reads.push({ method: "GET", path: `/v1/var/${pathOf(i)}`, token: "", body: "" });
    }
    // Every path exists before anything is timed.
    await load(url, writes, { concurrency: CONCURRENCY });

    const runs = { write: [] as number[], read: [] as number[] };
    const latencies = { write: [] as number[], read: [] as number[] };
    for (let round = 0; round < rounds; round++) {
      for (const [name, calls] of [
        ["write", writes],
        ["read", reads],
      ] as const) {
        const result = await load(url, calls, {
          concurrency: CONCURRENCY,
          durationMs,
          warmupMs: Math.min(500, durationMs / 4),
        });
        runs[name].push(result.latencies.length / result.seconds);
        for (const ms of result.latencies) latencies[name].push(ms);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

    const sample = items(42);
    const sealed = encryptItems(server.keyring, active.KeyID, sample);
    return {
      paths,
      items_bytes: Buffer.byteLength(JSON.stringify(sample)),
      write_per_s: Math.round(median(runs.write)),
      write_p50_ms: percentile(latencies.write, 0.5),
      write_p99_ms: percentile(latencies.write, 0.99),
      read_per_s: Math.round(median(runs.read)),
      read_p50_ms: percentile(latencies.read, 0.5),
      read_p99_ms: percentile(latencies.read, 0.99),
      encrypt_us: microseconds(20_000, () => encryptItems(server.keyring, active.KeyID, sample)),
      decrypt_us: microseconds(20_000, () => decryptItems(server.keyring, sealed)),
    };
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}
