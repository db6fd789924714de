/**
 * pino's JSON lines rewritten the way Nomad's monitor shows its own logs
 * (hclog), so `nomad monitor` and tools that read Nomad's log format read
 * chronomad's: text like
 * `2023-08-01T10:00:00.000Z [DEBUG] http: request: url=/v1/jobs status=200`,
 * or hclog's JSON (`@level`, `@message`, `@module`, `@timestamp`).
 */

/** hclog's LevelFromString: a pino level value, Infinity for "off", undefined for an unknown name. */
export function monitorLevel(name: string): number | undefined {
  switch (name.trim().toLowerCase()) {
    case "trace":
      return 10;
    case "debug":
      return 20;
    case "info":
      return 30;
    case "warn":
      return 40;
    case "error":
      return 50;
    case "off":
      return Number.POSITIVE_INFINITY;
    default:
      return undefined;
  }
}

/** hclog's level names; pino's fatal is hclog's error. */
function levelName(level: number): "trace" | "debug" | "info" | "warn" | "error" {
  if (level >= 50) return "error";
  if (level >= 40) return "warn";
  if (level >= 30) return "info";
  if (level >= 20) return "debug";
  return "trace";
}

/** hclog pads the shorter brackets so messages line up. */
const BRACKETS = {
  trace: "[TRACE]",
  debug: "[DEBUG]",
  info: "[INFO] ",
  warn: "[WARN] ",
  error: "[ERROR]",
} as const;

/** Fields pino adds to every line that hclog carries elsewhere or not at all. */
const FRAMING = new Set(["level", "time", "pid", "hostname", "msg", "name", "component"]);

interface PinoRecord {
  readonly level?: number;
  readonly time?: number;
  readonly msg?: string;
  readonly name?: string;
  readonly component?: string;
  readonly [field: string]: unknown;
}

/** One pino line as hclog text (with its newline), or as hclog JSON when `json`. */
export function hclogLine(line: string, json: boolean): string {
  let record: PinoRecord;
  try {
    record = JSON.parse(line) as PinoRecord;
  } catch {
    return line.endsWith("\n") ? line : `${line}\n`;
  }
  const level = levelName(record.level ?? 30);
  const timestamp = new Date(record.time ?? Date.now()).toISOString();
  const module = record.component ?? record.name ?? "chronomad";
  const message = record.msg ?? "";
  const fields = Object.entries(record).filter(([key]) => !FRAMING.has(key));
  if (json) {
    const out: Record<string, unknown> = {
      "@level": level,
      "@message": message,
      "@module": module,
      "@timestamp": timestamp,
    };
    for (const [key, value] of fields) out[key] = fieldValue(key, value);
    return `${JSON.stringify(out)}\n`;
  }
  let text = `${timestamp} ${BRACKETS[level]} ${module}: ${message}`;
  if (fields.length > 0) {
    text += `:${fields.map(([key, value]) => ` ${key}=${quoted(fieldValue(key, value))}`).join("")}`;
  }
  return `${text}\n`;
}

/** pino serializes errors as objects; hclog shows their message. */
function fieldValue(key: string, value: unknown): unknown {
  if (key === "err" && typeof value === "object" && value !== null && "message" in value) {
    return (value as { message: unknown }).message;
  }
  return value;
}

/** hclog quotes a value that has spaces or quotes in it (strconv.Quote). */
function quoted(value: unknown): string {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  return /^[^\s"=]*$/.test(text) && text !== "" ? text : JSON.stringify(text);
}
