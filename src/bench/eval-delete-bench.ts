import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { pino } from "pino";
import type { EvalDeleteRow } from "../../projections/evals.ts";
import { type EvaluationSpec, newEvaluation } from "../../streams/evals.ts";
import type { Envelope } from "../../streams/event-schema.ts";
import { DELETE_PAGE_SIZE } from "../api/eval-delete.ts";
import { loadConfig } from "../config.ts";
import { startServer } from "../server.ts";
import type { Projection } from "../store/projection.ts";
import type { Store } from "../store/store.ts";
import { percentile } from "./percentile.ts";

const quiet = pino({ level: "silent" });

export interface EvalDeleteFigures {
  readonly evals: number;
  readonly page_size: number;
  readonly populate_s: number;
  /** GET /v1/evaluations?filter=…&per_page=100, walking the first pages. */
  readonly list_filter_p50_ms: number;
  readonly list_filter_p99_ms: number;
  /** GET /v1/evaluations/count with a filter over every evaluation. */
  readonly count_filter_p50_ms: number;
  readonly count_filter_max_ms: number;
  /**
   * GET /v1/evaluations/count with a `matches` (RE2) filter over every
   * evaluation: rows decided per second, and the server's event-loop delay
   * while it ran (the walk yields between slices).
   */
  readonly count_regexp_rows_per_s: number;
  readonly count_regexp_loop_delay_p99_ms: number;
  readonly count_regexp_loop_delay_max_ms: number;
  /** DELETE /v1/evaluations {Filter} matching every evaluation. */
  readonly delete_total_s: number;
  readonly delete_count: number;
  readonly delete_pages: number;
  /** The longest time the server's event loop was held during the delete (walk, apply, HTTP). */
  readonly delete_max_event_loop_block_ms: number;
  /** The evals projection's evolve per delete page: the apply step the goal bounds. */
  readonly delete_apply_p50_ms: number;
  readonly delete_apply_p99_ms: number;
  readonly delete_apply_max_ms: number;
  /** Pages whose apply took longer than the 10 ms goal. */
  readonly delete_apply_over_10ms: number;
  readonly peak_heap_mb: number;
}

/**
 * One million evaluations on a real server (file log, fsync on every
 * write), then: listing with a filter, counting with a filter, and deleting
 * them all by filter with the broker paused, timing each page's apply.
 */
export async function benchEvalDelete(
  total = 1_000_000,
  progress: (what: string) => void = () => {},
  perPage = DELETE_PAGE_SIZE,
): Promise<EvalDeleteFigures> {
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-evals-"));
  try {
    const config = await loadConfig(
      ["--http-addr", "127.0.0.1:0", "--data-dir", dir, "--fsync", "always", "--log-level", "silent"],
      {},
    );
    const server = await startServer(config, { logger: quiet });
    let peakHeap = 0;
    const heap = setInterval(() => {
      peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
    }, 250);
    const url = `http://${server.address}`;
    let live: EvalDeleteFigures;
    try {
      progress(`writing ${total.toLocaleString("en-US")} evaluations`);
      const populate_s = await populate(server.store, total);

      const pause = await fetch(`${url}/v1/operator/scheduler/configuration`, {
        method: "PUT",
        body: JSON.stringify({ SchedulerAlgorithm: "binpack", PauseEvalBroker: true }),
      });
      if (!pause.ok) throw new Error(`pausing the broker: ${pause.status} ${await pause.text()}`);

      progress("GET /v1/evaluations?filter=…&per_page=100");
      const list = await timeListPages(url, 200);
      progress("GET /v1/evaluations/count?filter=…");
      const count = await timeCounts(url, 10);
      progress('GET /v1/evaluations/count?filter=JobID matches "…"');
      const regexp = await timeRegexpCount(url, total);

      progress("DELETE /v1/evaluations by filter");
      const applies = timeDeleteApplies(server.store);
      const loop = monitorEventLoopDelay({ resolution: 1 });
      loop.enable();
      const started = performance.now();
      const res = await longRequest(
        "DELETE",
        `${url}/v1/evaluations?per_page=${perPage}`,
        JSON.stringify({ Filter: 'Type == "service"' }),
      );
      const delete_total_s = (performance.now() - started) / 1000;
      loop.disable();
      if (res.status !== 200) throw new Error(`delete: ${res.status} ${res.body}`);
      const { Count } = JSON.parse(res.body) as { Count: number };
      const left = server.store.table("evals").size;
      if (Count !== total || left !== 0) throw new Error(`delete removed ${Count}, left ${left}`);
      live = {
        evals: total,
        page_size: perPage,
        populate_s: round(populate_s),
        list_filter_p50_ms: percentile(list, 0.5),
        list_filter_p99_ms: percentile(list, 0.99),
        count_filter_p50_ms: percentile(count, 0.5),
        count_filter_max_ms: percentile(count, 1),
        ...regexp,
        delete_total_s: round(delete_total_s),
        delete_count: Count,
        delete_pages: [...server.store.table<EvalDeleteRow>("eval_deletes").all()][0]?.Pages ?? 0,
        delete_max_event_loop_block_ms: round(loop.max / 1e6),
        delete_apply_p50_ms: percentile(applies, 0.5),
        delete_apply_p99_ms: percentile(applies, 0.99),
        delete_apply_max_ms: percentile(applies, 1),
        delete_apply_over_10ms: applies.filter((ms) => ms > 10).length,
        peak_heap_mb: Math.round(peakHeap / 2 ** 20),
      };
    } finally {
      clearInterval(heap);
      await server.close();
    }

    return live;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const PER_RECORD = 1000;

/** Writes the evaluations as records of 1,000, a few records per append. */
async function populate(store: Store, total: number): Promise<number> {
  const started = performance.now();
  const at = Date.now();
  const by = { kind: "server", id: "bench" } as const;
  let batch: Envelope[] = [];
  for (let written = 0; written < total; ) {
    const Evals: EvaluationSpec[] = [];
    for (let i = 0; i < PER_RECORD && written < total; i++, written++) {
      Evals.push(
        newEvaluation({
          ID: randomUUID(),
          Namespace: "default",
          Type: "service",
          TriggeredBy: written % 2 ? "node-update" : "job-register",
          JobID: `job-${written % 5000}`,
          Status: written % 2 ? "blocked" : "pending",
          CreateTime: at * 1e6,
        }),
      );
    }
    batch.push({ type: "EvaluationsUpserted", v: 1, at, by, data: { Evals } });
    if (batch.length === 10 || written === total) {
      const { last } = await store.append(batch);
      await store.waitFor(last);
      batch = [];
    }
  }
  return (performance.now() - started) / 1000;
}

async function timeListPages(url: string, pages: number): Promise<number[]> {
  const filter = encodeURIComponent('Status == "blocked"');
  const samples: number[] = [];
  let token = "";
  for (let i = 0; i < pages; i++) {
    const started = performance.now();
    const res = await fetch(
      `${url}/v1/evaluations?filter=${filter}&per_page=100${token ? `&next_token=${encodeURIComponent(token)}` : ""}`,
    );
    await res.arrayBuffer();
    samples.push(performance.now() - started);
    token = res.headers.get("x-nomad-nexttoken") ?? "";
    if (!res.ok) throw new Error(`list page ${i}: ${res.status}`);
    if (token === "") break;
  }
  return samples;
}

async function timeCounts(url: string, times: number): Promise<number[]> {
  const filter = encodeURIComponent('Status == "blocked"');
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    const res = await fetch(`${url}/v1/evaluations/count?namespace=*&filter=${filter}`);
    await res.arrayBuffer();
    samples.push(performance.now() - started);
    if (!res.ok) throw new Error(`count: ${res.status}`);
  }
  return samples;
}

/** One count over every evaluation with an RE2 `matches` clause, watching the loop. */
async function timeRegexpCount(url: string, total: number) {
  const filter = encodeURIComponent('JobID matches "^job-[0-9]*7$"');
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const started = performance.now();
  const res = await fetch(`${url}/v1/evaluations/count?namespace=*&filter=${filter}`);
  const body = (await res.json()) as { Count: number };
  const seconds = (performance.now() - started) / 1000;
  loop.disable();
  // JobIDs are job-(i % 5000): one in ten ends in 7.
  if (!res.ok || body.Count !== Math.floor((total + 2) / 10))
    throw new Error(`regexp count: ${res.status} ${body.Count}`);
  return {
    count_regexp_rows_per_s: Math.round(total / seconds),
    count_regexp_loop_delay_p99_ms: round(loop.percentile(99) / 1e6),
    count_regexp_loop_delay_max_ms: round(loop.max / 1e6),
  };
}

/**
 * Times the live server's evals projection for each delete-by-filter
 * record: its evolve, with everything that runs inside it (the rows'
 * indexes, the history observer, change$ subscribers such as the event
 * hub). The store keeps its projections private; the benchmark reaches in
 * to wrap the real apply in place rather than measure a copy of it.
 */
function timeDeleteApplies(store: Store): number[] {
  const projections = (store as unknown as { readonly projections: readonly Projection[] }).projections;
  const evals = projections.find((p) => p.name === "evals");
  if (!evals) throw new Error("no evals projection");
  const evolve = evals.evolve.bind(evals);
  const samples: number[] = [];
  evals.evolve = (ctx, event) => {
    if (event.type !== "EvaluationsDeletedByFilter") return evolve(ctx, event);
    const started = performance.now();
    evolve(ctx, event);
    samples.push(performance.now() - started);
  };
  return samples;
}

/** One request without fetch's five-minute header timeout: a delete of a million evaluations may take longer. */
function longRequest(method: string, url: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers = { "content-type": "application/json", "content-length": Buffer.byteLength(body) };
    const req = request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
