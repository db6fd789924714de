import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Connection, origin, type WireError } from "../nodesim/http-connection.ts";

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

const JSON_BODY = ["content-type", "application/json"];
const WARM_UP_CALLS = 2_048;

/**
 * Runs the client's code (undici's parser, which is WebAssembly, and its
 * own JavaScript) to its optimized state before the clock starts, against
 * a server of this process, so that the server measured sees nothing
 * before its first registration: a short run would count the client's
 * compilation as CPU the server's cores did not have.
 */
async function warmUp(calls: number): Promise<void> {
  const reply = Buffer.from('{"EvalID":"","Index":1}');
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end(reply));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const connection = new Connection(origin("127.0.0.1", (server.address() as AddressInfo).port));
  const body = JSON.stringify({ Job: { ID: "warm-up" } });
  try {
    for (let i = 0; i < calls; i++) {
      await connection.request({
        path: "/v1/jobs",
        headers: JSON_BODY,
        body,
        signal: undefined,
        timeoutMs: 0,
      });
    }
  } finally {
    connection.destroy();
    server.close();
  }
}

/** Absolute, sub-millisecond, and comparable across processes on one machine. */
export const wallClockMs = (): number => performance.timeOrigin + performance.now();

/**
 * The client side of the registration benchmark, in its own process so that
 * the load it makes shares no event loop with an in-process server, as a
 * Nomad client never shares one with Nomad.
 */
export async function register(run: RegistrationRun): Promise<RegistrationResult> {
  await warmUp(WARM_UP_CALLS);
  const target = new URL(run.url);
  // The simulator's connection (undici's Client, one request at a time):
  // Node's http client cost about 300 µs of this process's CPU a
  // registration, CPU the server on the same cores does not get.
  const url = origin(target.hostname.replace(/^\[(.*)\]$/, "$1"), Number(target.port || 80));
  const connections = Array.from({ length: run.concurrency }, () => new Connection(url));
  const send = async (connection: Connection, body: string): Promise<{ status: number; text: string }> => {
    try {
      const reply = await connection.request({
        path: "/v1/jobs",
        headers: JSON_BODY,
        body,
        signal: undefined,
        timeoutMs: 0,
      });
      return { status: reply.status, text: reply.body.toString("utf8") };
    } catch (err) {
      return { status: 0, text: (err as WireError).reason };
    }
  };

  const latencies: number[] = [];
  let errors = 0;
  let firstError = "";
  let next = 0;
  const cpuBefore = process.cpuUsage();
  const startedAt = wallClockMs();
  const loop = async (connection: Connection) => {
    while (next < run.bodies.length) {
      const body = run.bodies[next++]!;
      const t0 = performance.now();
      const { status, text } = await send(connection, body);
      latencies.push(performance.now() - t0);
      if (status !== 200) {
        errors++;
        firstError ||= `HTTP ${status}: ${text.slice(0, 300)}`;
      }
    }
  };
  await Promise.all(connections.map(loop));
  const endedAt = wallClockMs();
  const cpu = process.cpuUsage(cpuBefore);
  for (const c of connections) c.destroy();
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
