import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { killLeftovers, unmountUnder } from "../nomad-client/agent-leftovers.ts";

/**
 * The environment variable naming a real `nomad` binary (v1.6.1): when set,
 * a dev agent's client is a real Nomad client agent joined to chronomad's
 * RPC port, instead of a simulated node. run-suite.ts sets it when the
 * binary is there (NOMAD_* variables do not reach the suite).
 */
export const REAL_CLIENT_ENV = "CHRONOMAD_SHIM_CLIENT_BIN";

/** A free port on 127.0.0.1, as the suite's harness finds its own. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export interface RealClient {
  readonly process: ChildProcess;
  /** Stops the agent and any task process it left behind (a client agent leaves its tasks running). */
  stop(signal: NodeJS.Signals): void;
}

/**
 * Starts `nomad agent` as a client of chronomad, as Nomad's dev agent runs
 * its own client: named after the agent, datacenter dc1, raw_exec enabled,
 * the options the harness gave its client (e.g. test.tighten_network_timeouts).
 */
export async function startRealClient(options: {
  readonly bin: string;
  readonly name: string;
  readonly dataDir: string;
  readonly rpcAddr: string;
  readonly clientOptions: Readonly<Record<string, string>>;
  readonly aclEnabled: boolean;
  readonly logLevel: string;
}): Promise<RealClient> {
  mkdirSync(options.dataDir, { recursive: true });
  const http = await freePort();
  // A client agent binds only its HTTP port, but Nomad parses every advertise address.
  const [rpc, serf] = [await freePort(), await freePort()];
  const config = {
    name: options.name,
    data_dir: options.dataDir,
    bind_addr: "127.0.0.1",
    log_level: options.logLevel,
    ports: { http, rpc, serf },
    advertise: { http: `127.0.0.1:${http}`, rpc: `127.0.0.1:${rpc}`, serf: `127.0.0.1:${serf}` },
    server: { enabled: false },
    client: { enabled: true, servers: [options.rpcAddr], options: options.clientOptions },
    acl: { enabled: options.aclEnabled },
    plugin: { raw_exec: { config: { enabled: true } } },
    consul: { client_auto_join: false, auto_advertise: false },
    vault: { enabled: false },
  };
  const file = join(options.dataDir, "client.json");
  writeFileSync(file, JSON.stringify(config));
  const child = spawn(options.bin, ["agent", "-config", file], { stdio: ["ignore", "inherit", "inherit"] });
  return {
    process: child,
    stop(signal) {
      child.kill(signal);
      child.once("exit", () => {
        killLeftovers(options.dataDir);
        unmountUnder(options.dataDir);
      });
    },
  };
}
