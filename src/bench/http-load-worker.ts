import { Agent, request } from "node:http";
import { parentPort, workerData } from "node:worker_threads";

/** One request the load worker sends: a client RPC as one node, or a read. */
export interface LoadCall {
  /** Default PUT (client RPCs). */
  readonly method?: "GET" | "PUT";
  readonly path: string;
  readonly token: string;
  readonly body: string;
}

export interface LoadJob {
  /** http://host:port */
  readonly url: string;
  readonly calls: readonly LoadCall[];
  /** Requests in flight at once (one keep-alive connection each). */
  readonly concurrency: number;
  /** Send calls round-robin until this long has passed; 0 sends each call once. */
  readonly durationMs: number;
  /** Not measured: lets connections open and the JIT warm up. */
  readonly warmupMs: number;
}

export interface LoadResult {
  /** Milliseconds per answered request, in the measured period. */
  readonly latencies: Float64Array;
  readonly seconds: number;
  readonly errors: number;
  readonly firstError: string;
}

/**
 * The client side of the HTTP benchmarks, run in a worker thread so the
 * load it generates does not share the server's event loop.
 */
export async function run(job: LoadJob): Promise<LoadResult> {
  const target = new URL(job.url);
  const agent = new Agent({ keepAlive: true, maxSockets: job.concurrency });
  const send = (call: LoadCall) =>
    new Promise<number>((resolve) => {
      const req = request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          method: call.method ?? "PUT",
          path: call.path,
          headers: { "content-type": "application/json", "x-nomad-token": call.token },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        },
      );
      req.on("error", () => resolve(0));
      req.end(call.method === "GET" ? undefined : call.body);
    });

  let latencies = new Float64Array(1 << 16);
  let count = 0;
  let errors = 0;
  let firstError = "";
  let next = 0;
  let measuring = false;
  const started = performance.now();
  let measureFrom = started;
  const stopAt = job.durationMs > 0 ? started + job.warmupMs + job.durationMs : Number.POSITIVE_INFINITY;

  const loop = async () => {
    for (;;) {
      const now = performance.now();
      if (!measuring && now - started >= job.warmupMs) {
        measuring = true;
        measureFrom = now;
      }
      if (now >= stopAt) return;
      if (job.durationMs === 0 && next >= job.calls.length) return;
      const call = job.calls[next++ % job.calls.length]!;
      const t0 = performance.now();
      const status = await send(call);
      const ms = performance.now() - t0;
      if (status !== 200) {
        errors++;
        firstError ||= `${call.path}: HTTP ${status}`;
      }
      if (!measuring) continue;
      if (count === latencies.length) {
        const grown = new Float64Array(latencies.length * 2);
        grown.set(latencies);
        latencies = grown;
      }
      latencies[count++] = ms;
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, loop));
  const seconds = (performance.now() - measureFrom) / 1000;
  agent.destroy();
  return { latencies: latencies.slice(0, count), seconds, errors, firstError };
}

if (parentPort) {
  const port = parentPort;
  run(workerData as LoadJob).then(
    (result) => port.postMessage(result),
    (err: Error) => port.postMessage({ error: err.message }),
  );
}

// Forked by http-load.ts (loadFromProcess): one job over IPC, its result back, then exit.
if (process.send && process.argv.includes("--http-load-process")) {
  process.once("message", (job: LoadJob) => {
    run(job).then(
      (result) => process.send!({ result }, () => process.exit(0)),
      (err: Error) => process.send!({ error: err.stack ?? String(err) }, () => process.exit(1)),
    );
  });
}
