import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NOMAD_BIN } from "../cli/cli-run.ts";
import { killLeftovers, unmountUnder } from "./agent-leftovers.ts";

export { hasNomad, NOMAD_BIN } from "../cli/cli-run.ts";

export interface ClientAgentOptions {
  /** RPC addresses (host:port) of the servers the client joins. */
  readonly servers: readonly string[];
  /** The agent's name, which is the node's Name. */
  readonly name: string;
  /** Kept across restarts; a fresh temp dir (removed by `destroy`) when not given. */
  readonly dataDir?: string;
  readonly meta?: Readonly<Record<string, string>>;
  readonly nodeClass?: string;
  /** Appended to the generated configuration, at the top level. */
  readonly extraHcl?: string;
  /** The HTTP address the node advertises (default its own port): a relay in front of it, say. */
  readonly advertiseHttp?: string;
  /** chronomad's HTTP URL: lets `nodeID()` ask it when the client-id file is not written yet. */
  readonly serverUrl?: string;
}

/**
 * Fingerprinters that would probe the network (cloud metadata), look for
 * Consul or Vault, or CNI plugins: none exist here, and their retries only
 * add log noise and start-up time.
 */
const FINGERPRINT_DENYLIST = [
  "consul",
  "vault",
  "env_aws",
  "env_gce",
  "env_azure",
  "env_digitalocean",
  "cni",
  "plugins_cni",
  "landlock",
].join(",");

/** Every agent this process started and has not destroyed yet: `waitFor` shows their logs, `stopAllAgents` ends them. */
const live = new Set<ClientAgent>();

/**
 * A real `nomad agent` in its own process group, logging to a file: a
 * client only (`startClientAgent`) or, for comparisons, a one-server
 * cluster (`startServerAgent`).
 */
export class ClientAgent {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private paused = false;
  private halting = false;
  /** Set when the agent exited without being asked to: waitFor then fails at once. */
  unexpectedExit: string | undefined;
  /** When the current process was spawned (ms since the epoch), for the start-up figures tests print. */
  startedAt = 0;

  private constructor(
    readonly name: string,
    readonly dataDir: string,
    readonly configFile: string,
    readonly logFile: string,
    /** host:port of the agent's HTTP API. */
    readonly httpAddr: string,
    private readonly ownsDataDir: boolean,
    private readonly serverUrl: string | undefined,
  ) {}

  static async start(options: ClientAgentOptions): Promise<ClientAgent> {
    return ClientAgent.launch(options.name, options.dataDir, options.serverUrl, (dataDir, httpPort) =>
      clientHcl({ ...options, dataDir, httpPort }),
    );
  }

  /** Writes the configuration `hcl` gives for the data dir and HTTP port, and runs the agent on it. */
  static async launch(
    name: string,
    dataDirOption: string | undefined,
    serverUrl: string | undefined,
    hcl: (dataDir: string, httpPort: number) => string,
  ): Promise<ClientAgent> {
    const ownsDataDir = dataDirOption === undefined;
    const dataDir = dataDirOption ?? (await mkdtemp(join(tmpdir(), `nomad-agent-${name}-`)));
    const httpPort = await freePort();
    const configFile = join(dataDir, "agent.hcl");
    const logFile = join(dataDir, "agent.log");
    await writeFile(configFile, hcl(dataDir, httpPort));
    const agent = new ClientAgent(
      name,
      dataDir,
      configFile,
      logFile,
      `127.0.0.1:${httpPort}`,
      ownsDataDir,
      serverUrl,
    );
    agent.spawn();
    live.add(agent);
    return agent;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  private spawn(): void {
    // Appended, so a restart keeps the earlier run's lines for failure messages.
    const log = openSync(this.logFile, "a");
    try {
      // detached: a new session and process group, so the whole group can be
      // signalled and a test runner's Ctrl-C does not reach it first.
      const child = spawn(NOMAD_BIN, ["agent", "-config", this.configFile], {
        detached: true,
        stdio: ["ignore", log, log],
        env: { ...process.env, NOMAD_ADDR: `http://${this.httpAddr}` },
      });
      this.child = child;
      this.startedAt = Date.now();
      this.paused = false;
      this.unexpectedExit = undefined;
      this.exited = new Promise((resolve) => {
        child.once("exit", (code, signal) => {
          if (!this.halting) this.unexpectedExit = `exited on its own (code ${code}, signal ${signal})`;
          resolve();
        });
        child.once("error", (err) => {
          this.unexpectedExit = `could not run ${NOMAD_BIN}: ${err.message}`;
          resolve();
        });
      });
      this.exited.then(() => {
        if (this.child === child) this.child = undefined;
      });
    } finally {
      closeSync(log);
    }
  }

  /** SIGINT to the agent's process group, SIGKILL after `graceMs`. Tasks (own sessions) keep running. */
  async stop(graceMs = 15_000): Promise<void> {
    await this.halt(graceMs);
  }

  /** SIGKILL to the agent's process group: no shutdown at all. */
  async kill(): Promise<void> {
    await this.halt(0);
  }

  /** Stops the agent and starts it again on the same configuration and data dir (same node ID). */
  async restart(graceMs = 15_000): Promise<void> {
    await this.halt(graceMs);
    this.spawn();
  }

  /** SIGSTOP to the agent process only: it stops heartbeating while its tasks (other processes) run on. */
  pause(): void {
    const pid = this.requirePid();
    process.kill(pid, "SIGSTOP");
    this.paused = true;
  }

  resume(): void {
    const pid = this.requirePid();
    process.kill(pid, "SIGCONT");
    this.paused = false;
  }

  /**
   * Stops the agent, kills every process its tasks left behind (executors
   * and task processes run in their own sessions, so the agent's group
   * signal does not reach them) and removes the data dir it created.
   */
  async destroy(): Promise<void> {
    await this.halt(5_000);
    live.delete(this);
    killLeftovers(this.dataDir);
    unmountUnder(this.dataDir);
    if (this.ownsDataDir) await rm(this.dataDir, { recursive: true, force: true }).catch(() => undefined);
  }

  /** The last `n` lines of the agent's log. */
  logTail(n = 40): string {
    if (!existsSync(this.logFile)) return "(no log yet)";
    return readFileSync(this.logFile, "utf8")
      .split("\n")
      .slice(-n - 1)
      .join("\n");
  }

  /** The whole log, for searching it. */
  logText(): string {
    return existsSync(this.logFile) ? readFileSync(this.logFile, "utf8") : "";
  }

  /**
   * The node's ID: from the client's state dir once it has written it, else
   * from chronomad's node list by name. Undefined while neither knows it.
   */
  async nodeID(serverUrl = this.serverUrl): Promise<string | undefined> {
    const idFile = join(this.dataDir, "client", "client-id");
    if (existsSync(idFile)) {
      const id = (await readFile(idFile, "utf8")).trim();
      if (id) return id;
    }
    if (!serverUrl) return undefined;
    const filter = encodeURIComponent(`Name == "${this.name}"`);
    const res = await fetch(`${serverUrl}/v1/nodes?filter=${filter}`).catch(() => undefined);
    if (!res?.ok) return undefined;
    const nodes = (await res.json()) as { ID: string }[];
    return nodes.length === 1 ? nodes[0]!.ID : undefined;
  }

  private requirePid(): number {
    const pid = this.child?.pid;
    if (pid === undefined) throw new Error(`nomad agent ${this.name} is not running`);
    return pid;
  }

  private async halt(graceMs: number): Promise<void> {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    this.halting = true;
    try {
      await this.signalUntilExit(pid, graceMs);
    } finally {
      this.halting = false;
    }
  }

  private async signalUntilExit(pid: number, graceMs: number): Promise<void> {
    // A stopped process would hold SIGINT until continued.
    if (this.paused) signalGroup(pid, "SIGCONT");
    this.paused = false;
    if (graceMs > 0) {
      signalGroup(pid, "SIGINT");
      const done = await Promise.race([this.exited.then(() => true), sleep(graceMs).then(() => false)]);
      if (done) return;
    }
    signalGroup(pid, "SIGKILL");
    await this.exited;
  }
}

export function startClientAgent(options: ClientAgentOptions): Promise<ClientAgent> {
  return ClientAgent.start(options);
}

/** Ends every agent this process started and what their tasks left running (for afterAll). */
export async function stopAllAgents(): Promise<void> {
  await Promise.all([...live].map((a) => a.destroy()));
}

/** The log tails of every agent not destroyed yet, for failure messages. */
export function agentLogTails(n = 30): string {
  return [...live].map((a) => `--- ${a.name} (${a.logFile}) ---\n${a.logTail(n)}`).join("\n");
}

/**
 * Polls `predicate` until it returns something other than undefined, null
 * or false (a thrown error counts as not yet), and returns that. On timeout
 * it fails with `what`, the predicate's last error and the agents' log
 * tails. The deadline is a safety net, never a measurement.
 */
export async function waitFor<T>(
  predicate: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  options: {
    readonly timeoutMs?: number;
    readonly what: string;
    readonly everyMs?: number;
    readonly agents?: readonly ClientAgent[];
    /** More context for the failure message, e.g. chronomad's view of the allocation. */
    readonly detail?: () => string | Promise<string>;
  },
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  const watched = () => options.agents ?? [...live];
  let lastError: unknown;
  let died: ClientAgent | undefined;
  for (;;) {
    try {
      const value = await predicate();
      if (value !== undefined && value !== null && value !== false) return value;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    died = watched().find((a) => a.unexpectedExit);
    if (died || Date.now() > deadline) break;
    await sleep(options.everyMs ?? 250);
  }
  const detail = options.detail ? await Promise.resolve(options.detail()).catch((e) => String(e)) : "";
  throw new Error(
    [
      died
        ? `gave up waiting for ${options.what}: nomad agent ${died.name} ${died.unexpectedExit}`
        : `timed out after ${timeoutMs} ms waiting for ${options.what}`,
      lastError ? `last error: ${lastError instanceof Error ? lastError.message : String(lastError)}` : "",
      detail,
      ...watched().map((a) => `--- ${a.name} log tail (${a.logFile}) ---\n${a.logTail(40)}`),
    ]
      .filter(Boolean)
      .join("\n"),
  );
}

/** A TCP port free on 127.0.0.1 right now (bound to 0, read, closed). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function clientHcl(o: ClientAgentOptions & { dataDir: string; httpPort: number }): string {
  const q = (s: string) => JSON.stringify(s);
  const meta = Object.entries(o.meta ?? {})
    .map(([k, v]) => `    ${q(k)} = ${q(v)}`)
    .join("\n");
  return `# Written by test/compat/nomad-client/client-agent.ts
name = ${q(o.name)}
data_dir = ${q(o.dataDir)}
bind_addr = "127.0.0.1"
log_level = "DEBUG"
disable_update_check = true

ports {
  http = ${o.httpPort}
}

# Loopback cannot be advertised by default ("unsafe"); here it is the point.
# A client agent listens on neither RPC nor Serf, but the agent checks both addresses.
advertise {
  http = ${q(o.advertiseHttp ?? `127.0.0.1:${o.httpPort}`)}
  rpc = "127.0.0.1:${o.httpPort}"
  serf = "127.0.0.1:${o.httpPort}"
}

server {
  enabled = false
}

client {
  enabled = true
  servers = [${o.servers.map(q).join(", ")}]
  network_interface = "lo"
  # The cpu fingerprint cannot always read a frequency in containers; a fixed total keeps the node schedulable.
  cpu_total_compute = 4000
${o.nodeClass ? `  node_class = ${q(o.nodeClass)}\n` : ""}${meta ? `  meta {\n${meta}\n  }\n` : ""}  options {
    "fingerprint.denylist" = ${q(FINGERPRINT_DENYLIST)}
    "driver.allowlist" = "raw_exec"
  }
}

plugin "raw_exec" {
  config {
    enabled = true
  }
}

consul {
  auto_advertise = false
  server_auto_join = false
  client_auto_join = false
}

vault {
  enabled = false
}
${o.extraHcl ?? ""}
`;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is gone.
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A real Nomad server agent, bootstrapping a cluster of one, for comparisons with chronomad. */
export interface ServerAgent {
  readonly agent: ClientAgent;
  /** host:port its client agents join. */
  readonly rpcAddr: string;
  readonly url: string;
}

export async function startServerAgent(name: string, extraHcl = ""): Promise<ServerAgent> {
  const rpcPort = await freePort();
  const serfPort = await freePort();
  const agent = await ClientAgent.launch(
    name,
    undefined,
    undefined,
    (dataDir, httpPort) => `# Written by test/compat/nomad-client/client-agent.ts
name = ${JSON.stringify(name)}
data_dir = ${JSON.stringify(dataDir)}
bind_addr = "127.0.0.1"
log_level = "DEBUG"
disable_update_check = true

ports {
  http = ${httpPort}
  rpc = ${rpcPort}
  serf = ${serfPort}
}

advertise {
  http = "127.0.0.1:${httpPort}"
  rpc = "127.0.0.1:${rpcPort}"
  serf = "127.0.0.1:${serfPort}"
}

server {
  enabled = true
  bootstrap_expect = 1
}

client {
  enabled = false
}

consul {
  auto_advertise = false
  server_auto_join = false
  client_auto_join = false
}

vault {
  enabled = false
}
${extraHcl}
`,
  );
  return { agent, rpcAddr: `127.0.0.1:${rpcPort}`, url: `http://${agent.httpAddr}` };
}
