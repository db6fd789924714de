import { LogTap } from "../../src/logging/log-tap.ts";
import type { NodeSimOptions } from "../../src/nodesim/simulator.ts";
import { NodeSimulator } from "../../src/nodesim/simulator.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";

/**
 * One real chronomad and a few simulated client nodes (in this process), for
 * the client compatibility suites: Nomad's CLI, the Go api client and
 * python-nomad run against it as against a Nomad dev agent with clients.
 */
export interface CompatCluster {
  readonly server: TestServer;
  readonly sim: NodeSimulator;
  readonly nodeIDs: readonly string[];
  stop(): Promise<void>;
}

/** A driver quick enough that deployments finish within a command's monitor, and that never fails a task. */
const FAST_DRIVER: NodeSimOptions["driver"] = {
  setup: { min: 5, max: 20 },
  pull: { min: 10, max: 50 },
  start: { min: 20, max: 100 },
  kill: { min: 10, max: 50 },
  batchRunFor: { min: 300, max: 800 },
  failureRate: 0,
  eventInterval: 0,
  restartDelay: 100,
};

export interface CompatClusterOptions {
  readonly nodes?: number;
  /**
   * Task drivers the nodes report. The default leaves out `docker`, so that
   * a job using it finds no feasible node (test/compat/go-api's older tests
   * count on it), while the suites' own jobs use `mock_driver`.
   */
  readonly drivers?: readonly string[];
  readonly serverArgs?: readonly string[];
}

export async function startCompatCluster(options: CompatClusterOptions = {}): Promise<CompatCluster> {
  const nodes = options.nodes ?? 2;
  // A logger that writes nothing but can be tapped, so that /v1/agent/monitor streams it.
  const logTap = new LogTap("fatal", { name: "chronomad" }, { write: () => {} });
  const server = await startTestServer({
    args: [...(options.serverArgs ?? [])],
    deps: { logger: logTap.logger, logTap },
  });
  const sim = new NodeSimulator({
    server: server.url,
    nodes,
    seed: "compat",
    initialHeartbeatStaggerMs: 200,
    driver: FAST_DRIVER,
    shape: { drivers: [...(options.drivers ?? ["mock_driver", "raw_exec", "exec"])] },
  });
  const stop = async () => {
    await sim.stop().catch(() => {});
    await server.stop();
  };
  try {
    await sim.start();
    await waitFor(`${nodes} simulated nodes ready`, 30_000, async () => {
      const res = await server.call("/v1/nodes");
      if (!res.ok) return false;
      const list = (await res.json()) as { Status?: string }[];
      return list.length === nodes && list.every((n) => n.Status === "ready");
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { server, sim, nodeIDs: sim.nodes.map((n) => n.id), stop };
}

/** Polls `check` every 100 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The caller's environment without any NOMAD_* setting (token, namespace, region, TLS…), plus `extra`. */
export function cleanNomadEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("NOMAD_")) env[k] = v;
  return { ...env, ...extra };
}
