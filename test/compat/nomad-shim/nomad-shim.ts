/**
 * A `nomad` executable that starts chronomad, for tools that start a Nomad
 * agent themselves: Nomad's api test harness (internal/testutil) runs
 * `nomad -version`, then `nomad agent -config FILE [-dev]` with a JSON config,
 * and stops it with SIGINT. Here `agent` starts `chronomad serve` with the
 * config's HTTP and RPC ports, data dir and name, and, for `-dev` or an
 * enabled client, one client node named after the agent (datacenter dc1, as
 * Nomad's dev agent): a real Nomad client agent joined over the RPC port when
 * run-suite.ts names a nomad binary (real-client-agent.ts), else a simulated
 * node. Any other command is refused with exit status 1, so that a test
 * driving the real CLI through this file fails plainly.
 *
 * It is bundled with chronomad by prepare-nomad-shim.ts and runs as plain
 * JavaScript: the harness allows ten seconds for a server to come up, which a
 * TypeScript loader transpiling the whole server on every start can exceed on
 * a loaded machine.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { REAL_CLIENT_ENV, startRealClient } from "./real-client-agent.ts";

const here = dirname(fileURLToPath(import.meta.url));
const chronomad = join(here, "chronomad.mjs");

/** The fields of the harness's TestServerConfig that chronomad has a meaning for. */
interface AgentConfig {
  readonly name?: string;
  readonly data_dir?: string;
  readonly log_level?: string;
  readonly ports?: { readonly http?: number; readonly rpc?: number };
  readonly client?: { readonly enabled?: boolean; readonly options?: Readonly<Record<string, string>> };
  readonly acl?: { readonly enabled?: boolean };
}

const PINO_LEVELS: Readonly<Record<string, string>> = {
  TRACE: "trace",
  DEBUG: "debug",
  INFO: "info",
  WARN: "warn",
  ERROR: "error",
};

function startChronomad(args: readonly string[]): ChildProcess {
  return spawn(process.execPath, ["--max-semi-space-size=32", chronomad, ...args], {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, MSGPACKR_NATIVE_ACCELERATION_DISABLED: "true" },
  });
}

async function waitForLeader(httpAddr: string, server: ChildProcess): Promise<boolean> {
  while (server.exitCode === null && server.signalCode === null) {
    try {
      const res = await fetch(`http://${httpAddr}/v1/status/leader`);
      if (res.ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

function exited(child: ChildProcess): Promise<number> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  if (child.signalCode !== null) return Promise.resolve(1);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code ?? 1)));
}

/** One simulated client node named after the agent, as a dev agent's own client (no real nomad binary). */
function startSimulatedNode(
  httpAddr: string,
  name: string,
  server: ChildProcess,
  stopping: () => boolean,
): ChildProcess {
  const nodes = startChronomad([
    "nodesim",
    "--server",
    `http://${httpAddr}`,
    "--nodes",
    "1",
    "--name-prefix",
    name,
    "--datacenter",
    "dc1",
    "--report-every",
    "0",
    // A dev agent's node is ready as soon as it has registered.
    "--initial-heartbeat-stagger",
    "0s",
    // Task runs take a moment, as a real sleep in a test job would.
    "--start-time",
    "100ms",
    "--deregister",
  ]);
  // The simulated node goes when the server goes, whichever ends first.
  void exited(nodes).then(() => {
    if (!stopping()) server.kill("SIGINT");
  });
  return nodes;
}

async function agent(args: readonly string[]): Promise<number> {
  const configAt = args.indexOf("-config");
  const configFile = configAt >= 0 ? args[configAt + 1] : undefined;
  const dev = args.includes("-dev");
  const config: AgentConfig = configFile ? (JSON.parse(readFileSync(configFile, "utf8")) as AgentConfig) : {};
  const httpAddr = `127.0.0.1:${config.ports?.http ?? 4646}`;
  const rpcAddr = `127.0.0.1:${config.ports?.rpc ?? 4647}`;
  const name = config.name ?? "chronomad";
  const serveArgs = [
    "serve",
    "--http-addr",
    httpAddr,
    "--rpc-addr",
    rpcAddr,
    "--server-name",
    name,
    "--log-level",
    PINO_LEVELS[(config.log_level ?? "ERROR").toUpperCase()] ?? "error",
    // Test servers start several at a time on a small machine: never shed reads.
    "--shed-reads-after-lag",
    "0",
  ];
  if (config.data_dir) serveArgs.push("--data-dir", config.data_dir);
  else serveArgs.push("--log", "memory:");
  if (config.acl?.enabled) serveArgs.push("--acl-enabled");

  const children: ChildProcess[] = [];
  const stoppers: ((signal: NodeJS.Signals) => void)[] = [];
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    stopping = true;
    for (const s of stoppers) s(signal);
    for (const child of children) child.kill(signal);
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
  // A harness test that fails while its server starts never stops it (Nomad's
  // agents are left running too). Once the process that started this one has
  // gone, nobody will: stop, rather than keep a server per failed test.
  const parent = process.ppid;
  const orphaned = setInterval(() => {
    if (process.ppid !== parent) stop("SIGINT");
  }, 1000);
  orphaned.unref();

  const server = startChronomad(serveArgs);
  children.push(server);
  const realClientBin = process.env[REAL_CLIENT_ENV];
  if ((dev || config.client?.enabled) && (await waitForLeader(httpAddr, server)) && !stopping) {
    if (realClientBin) {
      const client = await startRealClient({
        bin: realClientBin,
        name,
        dataDir: join(config.data_dir ?? mkdtempSync(join(tmpdir(), "nomad-shim-")), "client"),
        rpcAddr,
        clientOptions: config.client?.options ?? {},
        aclEnabled: config.acl?.enabled ?? false,
        logLevel: (config.log_level ?? "ERROR").toUpperCase(),
      });
      stoppers.push((signal) => client.stop(signal));
      children.push(client.process);
      void exited(client.process).then(() => {
        if (!stopping) server.kill("SIGINT");
      });
    } else {
      children.push(startSimulatedNode(httpAddr, name, server, () => stopping));
    }
  }
  const code = await exited(server);
  for (const child of children) if (child.exitCode === null) child.kill("SIGINT");
  await Promise.all(children.map(exited));
  return code;
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "-version":
    case "--version":
    case "version":
      // The harness only checks the exit status; tools that parse it want Nomad's form.
      process.stdout.write("Nomad v1.6.1\nchronomad (Nomad HTTP API)\n");
      return 0;
    case "agent":
      return agent(rest);
    default:
      process.stderr.write(
        `this nomad executable only starts chronomad: "nomad ${argv.join(" ")}" is not served\n`,
      );
      return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
