import { Agent, request } from "node:http";

/** What the registration bench asks its client process to do. */
export interface RegistrationRun {
  /** http://host:port of any Nomad-API server. */
  readonly url: string;
  /** Request bodies of `PUT /v1/jobs`, sent each once, in order. */
  readonly bodies: readonly string[];
  /** Requests in flight at once, one keep-alive connection each. */
  readonly concurrency: number;
}

export interface RegistrationResult {
  /** Wall-clock time (ms since the epoch, sub-millisecond) the first request was sent. */
  readonly startedAt: number;
  /** Wall-clock time the last answer arrived. */
  readonly endedAt: number;
  /** Milliseconds per registration, in completion order. */
  readonly latencies: readonly number[];
  readonly errors: number;
  readonly firstError: string;
  /** The client's own CPU time over the run (ms), user and system. */
  readonly cpuMs: number;
}

/** Absolute, sub-millisecond, and comparable across processes on one machine. */
export const wallClockMs = (): number => performance.timeOrigin + performance.now();

/**
 * The client side of the registration benchmark, in its own process so that
 * the load it makes shares no event loop with an in-process server, as a
 * Nomad client never shares one with Nomad.
 */
export async function register(run: RegistrationRun): Promise<RegistrationResult> {
  const target = new URL(run.url);
  const agent = new Agent({ keepAlive: true, maxSockets: run.concurrency });
  const send = (body: string) =>
    new Promise<{ status: number; text: string }>((resolve) => {
      const req = request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          method: "PUT",
          path: "/v1/jobs",
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            text += chunk;
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on("error", (err) => resolve({ status: 0, text: err.message }));
      req.end(body);
    });

  const latencies: number[] = [];
  let errors = 0;
  let firstError = "";
  let next = 0;
  const cpuBefore = process.cpuUsage();
  const startedAt = wallClockMs();
  const loop = async () => {
    while (next < run.bodies.length) {
      const body = run.bodies[next++]!;
      const t0 = performance.now();
      const { status, text } = await send(body);
      latencies.push(performance.now() - t0);
      if (status !== 200) {
        errors++;
        firstError ||= `HTTP ${status}: ${text.slice(0, 300)}`;
      }
    }
  };
  await Promise.all(Array.from({ length: run.concurrency }, loop));
  const endedAt = wallClockMs();
  const cpu = process.cpuUsage(cpuBefore);
  agent.destroy();
  return { startedAt, endedAt, latencies, errors, firstError, cpuMs: (cpu.user + cpu.system) / 1000 };
}

// Forked by registration-bench.ts: one run over IPC, its result back, then exit.
if (process.send && process.argv.includes("--registration-client")) {
  process.once("message", (run: RegistrationRun) => {
    register(run).then(
      (result) => process.send!({ result }, () => process.exit(0)),
      (err: Error) => process.send!({ error: err.stack ?? String(err) }, () => process.exit(1)),
    );
  });
}
