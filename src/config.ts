import { readFile } from "node:fs/promises";
import { availableParallelism, hostname } from "node:os";
import { join, resolve } from "node:path";
import { parseGoBool } from "./query/filter/go-strconv.ts";
import { parseDuration } from "./util/duration.ts";

export interface ServerConfig {
  /** host:port the HTTP API listens on. */
  readonly httpAddr: string;
  readonly dataDir: string;
  /** Log URL: file:DIR, memory:, kafka://host:port/topic, esdb://host:port?tls=false. */
  readonly log: string;
  /** This server's name in the cluster (defaults to the host name). */
  readonly serverName: string;
  /** Snapshot after this many applied records; 0 = only at shutdown. */
  readonly snapshotEvery: number;
  /** History entries older than this (ms) are dropped from the derived history store at start; 0 keeps all. */
  readonly historyRetention: number;
  /** fdatasync on every group commit ("always") or leave it to the OS ("never"). */
  readonly fsync: "always" | "never";
  readonly logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  /** Event-stream events kept in memory (by event, not frame); older cursors replay the log instead. */
  readonly eventBufferSize: number;
  /** Frames an event-stream subscriber may fall behind by before it is closed. */
  readonly eventStreamMaxQueued: number;
  /** Event-stream subscribers served at once; one more is answered 429. */
  readonly eventStreamMaxSubscribers: number;
  /**
   * Event-loop lag (ms) past which lists, filters, counts and new event
   * streams are answered 429 with Retry-After; 0 never sheds.
   */
  readonly shedReadsAfterLag: number;
  readonly heartbeat: HeartbeatConfig;
  /** The volume watcher and the server → client detach calls of CSI unpublish (milliseconds). */
  readonly csi: CsiReleaseConfig;
  /**
   * host:port other servers and clients reach this server's HTTP API at.
   * Empty: the address the API is bound to (the host name instead of an
   * unspecified 0.0.0.0 or ::).
   */
  readonly advertiseAddr: string;
  /**
   * host:port Nomad's RPC protocol listens on, for Nomad client agents
   * (`nomad agent -client -servers HOST:PORT`). Unset: the HTTP host, one
   * port above the HTTP port (Nomad's 4646/4647), or an ephemeral port when
   * the HTTP port is 0.
   */
  readonly rpcAddr: string;
  /** host:port clients reach the RPC port at; empty: the bound address, as for advertise_addr. */
  readonly advertiseRpcAddr: string;
  /** Nomad's rpc_handshake_timeout (ms): how long a new RPC connection may take to send its first byte. */
  readonly rpcHandshakeTimeout: number;
  /** Nomad's rpc_max_conns_per_client: RPC connections one IP address may hold at once; 0 for no limit. */
  readonly rpcMaxConnsPerClient: number;
  /**
   * Scheduler threads: worker threads, each with a replica of the
   * scheduler's tables, that compute plans off the main event loop. 0
   * computes on the main thread, in slices of a few milliseconds.
   */
  readonly schedulerWorkers: number;
  /**
   * The scheduler threads' nice value (Linux, where it is per thread): above
   * 0, a main thread that reads heartbeats and applies plans gets a core
   * before them when more threads are runnable than there are cores.
   */
  readonly schedulerNice: number;
  /**
   * With a shared (Kafka) log: how long the leader may go unheard before
   * another server takes over. Bounds failover time; the broker's
   * group.min.session.timeout.ms (6s by default) is the floor.
   */
  readonly leaderSessionTimeout: number;
  /**
   * At shutdown: how long requests in flight may run on after the server
   * stops accepting, before their connections are cut. The whole shutdown
   * is bounded by this plus a fixed margin.
   */
  readonly shutdownGrace: number;
  /**
   * The cluster key-encryption key (32 bytes, base64) that wraps root key
   * material in the log and the keystore (src/keyring/keystore.ts); "" for
   * none. Secret: give it through the environment or keyring_kek_file.
   */
  readonly keyringKek: string;
  /** A file holding the cluster key-encryption key, base64. */
  readonly keyringKekFile: string;
  /** Nomad's root_key_gc_interval (ms): how often the leader rotates an old root key or collects unused ones. */
  readonly rootKeyGcInterval: number;
  /** Nomad's root_key_gc_threshold (ms): how old an unused, inactive root key must be to be deleted. */
  readonly rootKeyGcThreshold: number;
  /** Nomad's root_key_rotation_threshold (ms): the age at which the active root key is rotated. */
  readonly rootKeyRotationThreshold: number;
  /** Nomad's oidc_issuer: when set, /.well-known/openid-configuration is served. */
  readonly oidcIssuer: string;
  /** Nomad's `acl { enabled }`: every request is then authorized by its token. */
  readonly aclEnabled: boolean;
  /**
   * Nomad's `enable_debug`: without ACLs, whether anyone may read this
   * server's host data and runtime profiles (with ACLs, the token decides).
   */
  readonly enableDebug: boolean;
  /** Nomad's `acl { token_min_expiration_ttl }` (ms). */
  readonly aclTokenMinExpirationTtl: number;
  /** Nomad's `acl { token_max_expiration_ttl }` (ms). */
  readonly aclTokenMaxExpirationTtl: number;
  /** Nomad's `telemetry { disable_rpc_rate_metrics_labels }`: RPC counters without the identity label. */
  readonly disableRpcRateMetricsLabels: boolean;
  /**
   * Forensic mode: serve reads, history, `?at_index` and the event stream of
   * an existing log, run no leader service, append nothing (not even at
   * start) and refuse every write (src/api/read-only-refusal.ts).
   */
  readonly readOnly: boolean;
}

/** Nomad's heartbeat settings, with Nomad's names and defaults (milliseconds here). */
export interface HeartbeatConfig {
  readonly minHeartbeatTtl: number;
  readonly maxHeartbeatsPerSecond: number;
  readonly heartbeatGrace: number;
  readonly failoverHeartbeatTtl: number;
}

/** How CSI claims are released: the volume watcher's quiescent window, the detach calls' deadline and retries. */
export interface CsiReleaseConfig {
  readonly volumeQuiescentTimeout: number;
  readonly detachTimeout: number;
  readonly detachAttempts: number;
  readonly detachBackoff: number;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

interface Setting {
  /** snake_case name: the config file key; the flag is --kebab-case, the env var CHRONOMAD_UPPER_CASE. */
  readonly name: string;
  /** A "boolean" flag stands alone (`--acl-enabled`) or takes `=VALUE`; values are read as Go's ParseBool reads them. */
  readonly kind: "string" | "integer" | "number" | "duration" | "boolean";
  readonly choices?: readonly string[];
  /** What the setting does, for `chronomad serve --help`. */
  readonly help: string;
  /** Its value when nothing sets it, written as a flag would be; absent when derived (`help` says how). */
  readonly default?: string;
  /** The value's placeholder in the usage text. */
  readonly placeholder?: string;
}

const SETTINGS: readonly Setting[] = [
  {
    name: "http_addr",
    kind: "string",
    default: "127.0.0.1:4646",
    placeholder: "HOST:PORT",
    help: "address the HTTP API listens on",
  },
  {
    name: "data_dir",
    kind: "string",
    default: "./data",
    placeholder: "DIR",
    help: "directory for the log and snapshots",
  },
  {
    name: "log",
    kind: "string",
    placeholder: "URL",
    help: "event log: file:DIR, memory:, kafka://host:port/topic or esdb://host:port?tls=false[&stream=NAME] (default file:DATA_DIR/log)",
  },
  {
    name: "server_name",
    kind: "string",
    placeholder: "NAME",
    help: "this server's name (default the host name)",
  },
  {
    name: "snapshot_every",
    kind: "integer",
    default: "100000",
    help: "snapshot after this many applied records; 0 = only at shutdown",
  },
  {
    name: "history_retention",
    kind: "duration",
    default: "0s",
    help: "drop history entries older than this from the history store at start (the log keeps them); 0 keeps all",
  },
  {
    name: "fsync",
    kind: "string",
    choices: ["always", "never"],
    default: "always",
    placeholder: "MODE",
    help: "fdatasync the file log on every group commit, or leave it to the OS",
  },
  {
    name: "log_level",
    kind: "string",
    choices: ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
    default: "info",
    placeholder: "LEVEL",
    help: "level of the server's own (pino) log",
  },
  {
    name: "event_buffer_size",
    kind: "integer",
    default: "10000",
    help: "event-stream events kept in memory; older cursors replay the log",
  },
  {
    name: "event_stream_max_queued",
    kind: "integer",
    default: "4096",
    help: "frames an event-stream subscriber may fall behind by before it is closed",
  },
  {
    name: "event_stream_max_subscribers",
    kind: "integer",
    default: "1024",
    help: "event-stream subscribers served at once; one more is answered 429",
  },
  {
    name: "shed_reads_after_lag",
    kind: "duration",
    default: "500ms",
    help: "event-loop lag past which lists, filters, counts and new streams get 429; 0 never sheds",
  },
  { name: "min_heartbeat_ttl", kind: "duration", default: "10s", help: "Nomad's min_heartbeat_ttl" },
  {
    name: "max_heartbeats_per_second",
    kind: "number",
    default: "50",
    help: "Nomad's max_heartbeats_per_second",
  },
  { name: "heartbeat_grace", kind: "duration", default: "10s", help: "Nomad's heartbeat_grace" },
  { name: "failover_heartbeat_ttl", kind: "duration", default: "5m", help: "Nomad's failover_heartbeat_ttl" },
  {
    name: "csi_volume_quiescent_timeout",
    kind: "duration",
    default: "5m",
    help: "how long a CSI volume's watcher outlives the volume's last change (Nomad's volumewatcher quiescent timeout)",
  },
  {
    name: "csi_detach_timeout",
    kind: "duration",
    default: "30s",
    help: "how long a client has to answer a CSI detach call before it is recorded as timed out",
  },
  {
    name: "csi_detach_attempts",
    kind: "integer",
    default: "3",
    help: "CSI detach calls of one unpublish step before the unpublish gives up (the watcher tries again later)",
  },
  {
    name: "csi_detach_backoff",
    kind: "duration",
    default: "1s",
    help: "wait before the second CSI detach call of a step, doubled before each further one",
  },
  {
    name: "rpc_addr",
    kind: "string",
    placeholder: "HOST:PORT",
    help: "address Nomad's RPC protocol listens on, for Nomad client agents (default the HTTP host, port 4647 beside 4646: one above the HTTP port, ephemeral beside 0)",
  },
  {
    name: "advertise_rpc_addr",
    kind: "string",
    placeholder: "HOST:PORT",
    help: "address client agents reach the RPC port at (default the bound address, with the host name for 0.0.0.0)",
  },
  { name: "rpc_handshake_timeout", kind: "duration", default: "5s", help: "Nomad's rpc_handshake_timeout" },
  {
    name: "rpc_max_conns_per_client",
    kind: "number",
    default: "100",
    help: "Nomad's rpc_max_conns_per_client: RPC connections per client IP (0 for no limit)",
  },
  {
    name: "scheduler_workers",
    kind: "number",
    help: "threads that compute plans off the main event loop, each on a replica of the scheduler's tables (default: cores − 1, at least 1; 0 computes on the main thread, in slices)",
  },
  {
    name: "scheduler_nice",
    kind: "number",
    default: "0",
    help: "nice value of the scheduler threads (Linux; 0 to 19): above 0, heartbeats and plan applies get a core before plan computing on a machine short of cores",
  },
  {
    name: "advertise_addr",
    kind: "string",
    placeholder: "HOST:PORT",
    help: "address other servers and clients reach this API at (default the bound address, with the host name for 0.0.0.0)",
  },
  {
    name: "leader_session_timeout",
    kind: "duration",
    default: "6s",
    help: "with a shared (Kafka, EventStoreDB) log: how long the leader may go unheard before another takes over",
  },
  {
    name: "shutdown_grace",
    kind: "duration",
    default: "10s",
    help: "at shutdown, how long requests in flight may run on before their connections are cut",
  },
  {
    name: "keyring_kek",
    kind: "string",
    placeholder: "BASE64",
    help: "cluster key-encryption key (32 bytes) wrapping root keys; secret: prefer the environment or keyring_kek_file",
  },
  {
    name: "keyring_kek_file",
    kind: "string",
    placeholder: "FILE",
    help: "file holding the cluster key-encryption key, base64",
  },
  {
    name: "root_key_gc_interval",
    kind: "duration",
    default: "10m",
    help: "Nomad's root_key_gc_interval: how often the leader rotates an old root key or deletes unused ones",
  },
  {
    name: "root_key_gc_threshold",
    kind: "duration",
    default: "1h",
    help: "Nomad's root_key_gc_threshold: how old an inactive root key nothing uses must be to be deleted",
  },
  {
    name: "root_key_rotation_threshold",
    kind: "duration",
    default: "720h",
    help: "Nomad's root_key_rotation_threshold: the age at which the leader rotates the active root key",
  },
  {
    name: "oidc_issuer",
    kind: "string",
    placeholder: "URL",
    help: "Nomad's oidc_issuer: when set, /.well-known/openid-configuration is served",
  },
  {
    name: "enable_debug",
    kind: "boolean",
    default: "false",
    help: "Nomad's enable_debug: without ACLs, serve /v1/agent/host and /v1/agent/pprof to anyone (heap sampling then runs from the start)",
  },
  {
    name: "acl_enabled",
    kind: "boolean",
    default: "false",
    help: "Nomad's acl { enabled }: authorize every request by its ACL token (bootstrap with POST /v1/acl/bootstrap)",
  },
  {
    name: "acl_token_min_expiration_ttl",
    kind: "duration",
    default: "1m",
    help: "Nomad's acl { token_min_expiration_ttl }: the shortest expiry a token may be given",
  },
  {
    name: "acl_token_max_expiration_ttl",
    kind: "duration",
    default: "24h",
    help: "Nomad's acl { token_max_expiration_ttl }: the longest expiry a token may be given",
  },
  {
    name: "disable_rpc_rate_metrics_labels",
    kind: "boolean",
    default: "false",
    help: "Nomad's telemetry { disable_rpc_rate_metrics_labels }: count RPCs without the identity label",
  },
  {
    name: "read_only",
    kind: "boolean",
    default: "false",
    help:
      "forensic mode: serve reads, history, ?at_index and the event stream of an existing log (a file log " +
      "is opened without its lock, beside any writer); run no leader service, append nothing, refuse every write",
  },
];

const isBooleanFlag = (flag: string) => SETTINGS.some((s) => s.kind === "boolean" && flagOf(s) === flag);

const flagOf = (s: Setting) => `--${s.name.replaceAll("_", "-")}`;
const envOf = (s: Setting) => `CHRONOMAD_${s.name.toUpperCase()}`;

/** The flags `chronomad serve` accepts, for its usage text. */
export const SERVE_FLAGS = [...SETTINGS.map(flagOf), "--config"];

const HELP_FLAGS = new Set(["--help", "-h"]);

/** Whether `chronomad serve` was asked for its usage: `--help` or `-h` where a flag (not a value) goes. */
export function wantsHelp(args: readonly string[]): boolean {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (HELP_FLAGS.has(arg)) return true;
    // Every other flag but a boolean one takes a value: the next argument, unless written --flag=value.
    if (!arg.includes("=") && !isBooleanFlag(arg)) i++;
  }
  return false;
}

/** `chronomad serve --help`: every setting, from the table loadConfig reads. */
export function serveUsage(): string {
  const rows: [string, string][] = [
    ["--config FILE", "JSON object of settings, keyed by their snake_case names (env CHRONOMAD_CONFIG)"],
  ];
  for (const s of SETTINGS) {
    const placeholder = s.kind === "boolean" ? "[=BOOL]" : (s.placeholder ?? s.kind.toUpperCase());
    const details = [
      s.choices ? `one of ${s.choices.join(", ")}` : "",
      s.default !== undefined ? `default ${s.default}` : "",
      `env ${envOf(s)}`,
    ]
      .filter((d) => d !== "")
      .join("; ");
    rows.push([`${flagOf(s)}${s.kind === "boolean" ? "" : " "}${placeholder}`, `${s.help} (${details})`]);
  }
  rows.push(["-h, --help", "print this and exit"]);
  const width = Math.max(...rows.map(([flag]) => flag.length)) + 2;
  return [
    "Usage: chronomad serve [flags]",
    "",
    "Runs a chronomad server until SIGTERM or SIGINT. Each setting comes from its",
    "flag (--flag VALUE or --flag=VALUE; a boolean flag alone means true), else its",
    "environment variable, else the config file, else its default.",
    "",
    "Flags:",
    ...rows.map(([flag, text]) => `  ${flag.padEnd(width)}${text}`),
    "",
  ].join("\n");
}

/**
 * Builds the server configuration. Precedence: flags, then environment
 * (CHRONOMAD_*), then the JSON config file (--config), then defaults.
 * Anything unknown or malformed is an error naming it.
 */
export async function loadConfig(
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<ServerConfig> {
  const fromFlags = new Map<string, string>();
  let configFile = env.CHRONOMAD_CONFIG;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const eq = arg.indexOf("=");
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const value = eq > 0 ? arg.slice(eq + 1) : isBooleanFlag(flag) ? "true" : args[++i];
    if (value === undefined) throw new ConfigError(`flag ${flag} needs a value`);
    if (flag === "--config") {
      configFile = value;
      continue;
    }
    const setting = SETTINGS.find((s) => flagOf(s) === flag);
    if (!setting) throw new ConfigError(`unknown flag ${flag} (known: ${SERVE_FLAGS.join(", ")})`);
    fromFlags.set(setting.name, value);
  }

  const fromFile = configFile ? await readConfigFile(configFile) : new Map<string, unknown>();
  const raw = new Map<string, unknown>();
  for (const s of SETTINGS) {
    const v = fromFlags.get(s.name) ?? env[envOf(s)] ?? fromFile.get(s.name);
    if (v !== undefined && v !== "") raw.set(s.name, parseSetting(s, v));
    else if (s.default !== undefined) raw.set(s.name, parseSetting(s, s.default));
  }
  const value = <T>(name: string) => raw.get(name) as T;

  const dataDir = resolve(value<string>("data_dir"));
  const config: ServerConfig = {
    httpAddr: value("http_addr"),
    dataDir,
    log: value<string | undefined>("log") ?? `file:${join(dataDir, "log")}`,
    serverName: value<string | undefined>("server_name") ?? hostname(),
    snapshotEvery: value("snapshot_every"),
    historyRetention: value("history_retention"),
    fsync: value("fsync"),
    logLevel: value("log_level"),
    eventBufferSize: value("event_buffer_size"),
    eventStreamMaxQueued: value("event_stream_max_queued"),
    eventStreamMaxSubscribers: value("event_stream_max_subscribers"),
    shedReadsAfterLag: value("shed_reads_after_lag"),
    heartbeat: {
      minHeartbeatTtl: value("min_heartbeat_ttl"),
      maxHeartbeatsPerSecond: value("max_heartbeats_per_second"),
      heartbeatGrace: value("heartbeat_grace"),
      failoverHeartbeatTtl: value("failover_heartbeat_ttl"),
    },
    csi: {
      volumeQuiescentTimeout: value("csi_volume_quiescent_timeout"),
      detachTimeout: value("csi_detach_timeout"),
      detachAttempts: value("csi_detach_attempts"),
      detachBackoff: value("csi_detach_backoff"),
    },
    advertiseAddr: value<string | undefined>("advertise_addr") ?? "",
    rpcAddr: value<string | undefined>("rpc_addr") ?? rpcBesideHttp(value("http_addr")),
    advertiseRpcAddr: value<string | undefined>("advertise_rpc_addr") ?? "",
    rpcHandshakeTimeout: value("rpc_handshake_timeout"),
    rpcMaxConnsPerClient: value("rpc_max_conns_per_client"),
    schedulerWorkers: value<number | undefined>("scheduler_workers") ?? defaultSchedulerWorkers(),
    schedulerNice: value("scheduler_nice"),
    leaderSessionTimeout: value("leader_session_timeout"),
    shutdownGrace: value("shutdown_grace"),
    keyringKek: value<string | undefined>("keyring_kek") ?? "",
    keyringKekFile: value<string | undefined>("keyring_kek_file") ?? "",
    rootKeyGcInterval: value("root_key_gc_interval"),
    rootKeyGcThreshold: value("root_key_gc_threshold"),
    rootKeyRotationThreshold: value("root_key_rotation_threshold"),
    oidcIssuer: value<string | undefined>("oidc_issuer") ?? "",
    aclEnabled: value("acl_enabled"),
    enableDebug: value("enable_debug"),
    aclTokenMinExpirationTtl: value("acl_token_min_expiration_ttl"),
    aclTokenMaxExpirationTtl: value("acl_token_max_expiration_ttl"),
    disableRpcRateMetricsLabels: value("disable_rpc_rate_metrics_labels"),
    readOnly: value("read_only"),
  };
  splitHostPort(config.httpAddr);
  if (config.advertiseAddr) splitHostPort(config.advertiseAddr, "advertise_addr");
  splitHostPort(config.rpcAddr, "rpc_addr");
  if (config.advertiseRpcAddr) splitHostPort(config.advertiseRpcAddr, "advertise_rpc_addr");
  if (!Number.isInteger(config.rpcMaxConnsPerClient) || config.rpcMaxConnsPerClient < 0) {
    throw new ConfigError("rpc_max_conns_per_client must be a whole number, 0 or more");
  }
  if (!Number.isInteger(config.schedulerWorkers) || config.schedulerWorkers < 0) {
    throw new ConfigError("scheduler_workers must be a whole number, 0 or more");
  }
  if (!Number.isInteger(config.schedulerNice) || config.schedulerNice < 0 || config.schedulerNice > 19) {
    throw new ConfigError("scheduler_nice must be a whole number from 0 to 19");
  }
  if (config.keyringKek && config.keyringKekFile) {
    throw new ConfigError("set keyring_kek or keyring_kek_file, not both");
  }
  if (config.rootKeyGcInterval <= 0) throw new ConfigError("root_key_gc_interval must be positive");
  if (config.rootKeyRotationThreshold <= 0) {
    throw new ConfigError("root_key_rotation_threshold must be positive");
  }
  if (config.aclTokenMinExpirationTtl > config.aclTokenMaxExpirationTtl) {
    throw new ConfigError("acl_token_min_expiration_ttl must not exceed acl_token_max_expiration_ttl");
  }
  if (config.readOnly && config.log === "memory:") {
    throw new ConfigError("read_only needs an existing log to serve; a memory: log starts empty");
  }
  if (config.oidcIssuer && !URL.canParse(config.oidcIssuer)) {
    throw new ConfigError(`oidc_issuer must be a URL, not "${config.oidcIssuer}"`);
  }
  return config;
}

async function readConfigFile(path: string): Promise<Map<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new ConfigError(`cannot read config file ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`config file ${path} must hold a JSON object`);
  }
  const out = new Map<string, unknown>();
  for (const [k, v] of Object.entries(parsed)) {
    if (!SETTINGS.some((s) => s.name === k)) {
      throw new ConfigError(
        `config file ${path}: unknown key "${k}" (known: ${SETTINGS.map((s) => s.name).join(", ")})`,
      );
    }
    out.set(k, v);
  }
  return out;
}

function parseSetting(s: Setting, v: unknown): unknown {
  const where = `${s.name} (${flagOf(s)}, ${envOf(s)})`;
  switch (s.kind) {
    case "string":
      if (typeof v !== "string") throw new ConfigError(`${where} must be a string`);
      if (s.choices && !s.choices.includes(v)) {
        throw new ConfigError(`${where} must be one of ${s.choices.join(", ")}, not "${v}"`);
      }
      return v;
    case "integer":
    case "number": {
      const n = typeof v === "number" ? v : Number(v);
      if (!Number.isFinite(n) || n < 0 || (s.kind === "integer" && !Number.isInteger(n))) {
        throw new ConfigError(`${where} must be a non-negative ${s.kind}, not ${JSON.stringify(v)}`);
      }
      return n;
    }
    case "boolean": {
      if (typeof v === "boolean") return v;
      const b = typeof v === "string" ? parseGoBool(v) : undefined;
      if (!b?.ok)
        throw new ConfigError(`${where} must be a boolean (true or false), not ${JSON.stringify(v)}`);
      return b.value;
    }
    case "duration": {
      const ms = typeof v === "string" ? parseDuration(v) : undefined;
      if (ms === undefined || ms < 0) {
        throw new ConfigError(`${where} must be a duration such as "10s" or "5m", not ${JSON.stringify(v)}`);
      }
      return ms;
    }
  }
}

/** The default rpc_addr: Nomad's ports are 4646 (HTTP) and 4647 (RPC); port 0 stays ephemeral. */
function rpcBesideHttp(httpAddr: string): string {
  const { host, port } = splitHostPort(httpAddr);
  const h = host.includes(":") ? `[${host}]` : host;
  return `${h}:${port === 0 ? 0 : port + 1}`;
}

/** Splits "host:port" (or "[v6]:port"); throws a ConfigError naming the bad address. */
export function splitHostPort(addr: string, setting = "http_addr"): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(addr);
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || port > 65535) throw new ConfigError(`${setting} must be host:port, not "${addr}"`);
  return { host: m[1] ?? (m[2] || "0.0.0.0"), port };
}

/** `scheduler_workers`' default: a thread per core but the main thread's, at least one. */
export function defaultSchedulerWorkers(): number {
  return Math.max(1, availableParallelism() - 1);
}
