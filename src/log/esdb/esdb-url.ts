import { LogError } from "../event-log.ts";

/** What an `esdb://` log URL names: the EventStoreDB node(s) and the one stream holding the log. */
export interface EsdbLogAddress {
  /** The client's connection string: the URL without `stream`. */
  readonly connectionString: string;
  readonly stream: string;
  /** The URL as logs and `/v1/agent/self` show it: the password hidden. */
  readonly display: string;
}

/**
 * chronomad serves one region, Nomad's default "global" (jobs without a
 * Region get it too), so a cluster's stream is `chronomad-global` unless the
 * URL names another: two clusters on one EventStoreDB need distinct names.
 */
export const DEFAULT_ESDB_STREAM = "chronomad-global";

const HOST = /^(\[[0-9a-fA-F:.]+\]|[^\s:/,@[\]]+):(\d{1,5})$/;
// Connection-string settings the client understands and that leave the log's
// semantics alone; throwOnAppendFailure is not among them (the log relies on it).
const CLIENT_PARAMS = new Set([
  "tls",
  "tlsVerifyCert",
  "tlsCAFile",
  "connectionName",
  "defaultDeadline",
  "keepAliveInterval",
  "keepAliveTimeout",
  "nodePreference",
  "maxDiscoverAttempts",
  "discoveryInterval",
  "gossipTimeout",
]);
const MAX_STREAM_LENGTH = 200;

/**
 * Parses `esdb://[user:password@]host:port[,host:port][?tls=false][&stream=NAME]`.
 * Split by hand, as for kafka://: a comma-separated host list is not a valid
 * URL authority.
 */
export function parseEsdbUrl(url: string): EsdbLogAddress {
  const match = /^esdb:\/\/(?:([^@/?#]*)@)?([^/?#@]+)\/?(?:\?([^#]*))?$/.exec(url.trim());
  if (!match) throw config(url, "expected esdb://host:port[,host:port][?tls=false&stream=NAME]");
  const [, userinfo, hosts = "", query = ""] = match;

  for (const host of hosts.split(",")) {
    const parts = HOST.exec(host.trim());
    const port = Number(parts?.[2]);
    if (!parts || port < 1 || port > 65535) throw config(url, `bad node address "${host}" (host:port)`);
  }
  if (userinfo !== undefined && !/^[^:]+:.*$/.test(userinfo)) {
    throw config(url, "credentials must be user:password");
  }

  const params = new URLSearchParams(query);
  const stream = params.get("stream") ?? DEFAULT_ESDB_STREAM;
  if (params.getAll("stream").length > 1) throw config(url, "stream is given more than once");
  if (!stream || stream.startsWith("$") || /[\s]/.test(stream) || stream.length > MAX_STREAM_LENGTH) {
    throw config(
      url,
      `bad stream name "${stream}" (non-empty, no spaces, not a $system stream, at most ${MAX_STREAM_LENGTH} characters)`,
    );
  }
  params.delete("stream");
  for (const key of params.keys()) {
    if (!CLIENT_PARAMS.has(key)) throw config(url, `unknown parameter "${key}"`);
  }
  const tls = params.get("tls");
  if (tls !== null && tls !== "true" && tls !== "false") throw config(url, "tls must be true or false");

  const rest = params.toString();
  const auth = userinfo === undefined ? "" : `${userinfo}@`;
  const connectionString = `esdb://${auth}${hosts}${rest ? `?${rest}` : ""}`;
  return { connectionString, stream, display: redact(url.trim()) };
}

/** The URL with its password, if any, replaced by `***`. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
}

function config(url: string, why: string): LogError {
  // The password never reaches an error message.
  return new LogError(`bad EventStoreDB log URL ${JSON.stringify(redact(url))}: ${why}`, "config");
}
