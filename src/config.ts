import { readFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { parseDuration } from "./util/duration.ts";

export interface ServerConfig {
  /** host:port the HTTP API listens on. */
  readonly httpAddr: string;
  readonly dataDir: string;
  /** Log URL: file:DIR, memory:, kafka://host:port/topic. */
  readonly log: string;
  /** This server's name in the cluster (defaults to the host name). */
  readonly serverName: string;
  /** Snapshot after this many applied records; 0 = only at shutdown. */
  readonly snapshotEvery: number;
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
  /**
   * host:port other servers and clients reach this server's HTTP API at.
   * Empty: the address the API is bound to (the host name instead of an
   * unspecified 0.0.0.0 or ::).
   */
  readonly advertiseAddr: string;
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
}

/** Nomad's heartbeat settings, with Nomad's names and defaults (milliseconds here). */
export interface HeartbeatConfig {
  readonly minHeartbeatTtl: number;
  readonly maxHeartbeatsPerSecond: number;
  readonly heartbeatGrace: number;
  readonly failoverHeartbeatTtl: number;
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
  readonly kind: "string" | "integer" | "number" | "duration";
  readonly choices?: readonly string[];
}

const SETTINGS: readonly Setting[] = [
  { name: "http_addr", kind: "string" },
  { name: "data_dir", kind: "string" },
  { name: "log", kind: "string" },
  { name: "server_name", kind: "string" },
  { name: "snapshot_every", kind: "integer" },
  { name: "fsync", kind: "string", choices: ["always", "never"] },
  {
    name: "log_level",
    kind: "string",
    choices: ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
  },
  { name: "event_buffer_size", kind: "integer" },
  { name: "event_stream_max_queued", kind: "integer" },
  { name: "event_stream_max_subscribers", kind: "integer" },
  { name: "shed_reads_after_lag", kind: "duration" },
  { name: "min_heartbeat_ttl", kind: "duration" },
  { name: "max_heartbeats_per_second", kind: "number" },
  { name: "heartbeat_grace", kind: "duration" },
  { name: "failover_heartbeat_ttl", kind: "duration" },
  { name: "advertise_addr", kind: "string" },
  { name: "leader_session_timeout", kind: "duration" },
  { name: "shutdown_grace", kind: "duration" },
];

const flagOf = (s: Setting) => `--${s.name.replaceAll("_", "-")}`;
const envOf = (s: Setting) => `CHRONOMAD_${s.name.toUpperCase()}`;

/** The flags `chronomad serve` accepts, for its usage text. */
export const SERVE_FLAGS = [...SETTINGS.map(flagOf), "--config"];

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
    const value = eq > 0 ? arg.slice(eq + 1) : args[++i];
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
  }

  const dataDir = resolve((raw.get("data_dir") as string | undefined) ?? "./data");
  const config: ServerConfig = {
    httpAddr: (raw.get("http_addr") as string | undefined) ?? "127.0.0.1:4646",
    dataDir,
    log: (raw.get("log") as string | undefined) ?? `file:${join(dataDir, "log")}`,
    serverName: (raw.get("server_name") as string | undefined) ?? hostname(),
    snapshotEvery: (raw.get("snapshot_every") as number | undefined) ?? 100_000,
    fsync: (raw.get("fsync") as ServerConfig["fsync"] | undefined) ?? "always",
    logLevel: (raw.get("log_level") as ServerConfig["logLevel"] | undefined) ?? "info",
    eventBufferSize: (raw.get("event_buffer_size") as number | undefined) ?? 10_000,
    eventStreamMaxQueued: (raw.get("event_stream_max_queued") as number | undefined) ?? 4096,
    eventStreamMaxSubscribers: (raw.get("event_stream_max_subscribers") as number | undefined) ?? 1024,
    shedReadsAfterLag: (raw.get("shed_reads_after_lag") as number | undefined) ?? 500,
    heartbeat: {
      minHeartbeatTtl: (raw.get("min_heartbeat_ttl") as number | undefined) ?? 10_000,
      maxHeartbeatsPerSecond: (raw.get("max_heartbeats_per_second") as number | undefined) ?? 50,
      heartbeatGrace: (raw.get("heartbeat_grace") as number | undefined) ?? 10_000,
      failoverHeartbeatTtl: (raw.get("failover_heartbeat_ttl") as number | undefined) ?? 300_000,
    },
    advertiseAddr: (raw.get("advertise_addr") as string | undefined) ?? "",
    leaderSessionTimeout: (raw.get("leader_session_timeout") as number | undefined) ?? 6_000,
    shutdownGrace: (raw.get("shutdown_grace") as number | undefined) ?? 10_000,
  };
  splitHostPort(config.httpAddr);
  if (config.advertiseAddr) splitHostPort(config.advertiseAddr, "advertise_addr");
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
    case "duration": {
      const ms = typeof v === "string" ? parseDuration(v) : undefined;
      if (ms === undefined || ms < 0) {
        throw new ConfigError(`${where} must be a duration such as "10s" or "5m", not ${JSON.stringify(v)}`);
      }
      return ms;
    }
  }
}

/** Splits "host:port" (or "[v6]:port"); throws a ConfigError naming the bad address. */
export function splitHostPort(addr: string, setting = "http_addr"): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(addr);
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || port > 65535) throw new ConfigError(`${setting} must be host:port, not "${addr}"`);
  return { host: m[1] ?? (m[2] || "0.0.0.0"), port };
}
