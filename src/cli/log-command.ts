import { basename, join } from "node:path";
import { pino } from "pino";
import { CodecError, unpackPlain } from "../codec/envelope-codec.ts";
import { type EventLog, LogError } from "../log/event-log.ts";
import { repairFileLog, verifyFileLog } from "../log/file/index.ts";
import { listSegmentFiles } from "../log/file/segment-files.ts";
import { fileLogDir, openLog } from "../log/open-log.ts";

const VERIFY_USAGE = `  chronomad log verify [--data-dir D | --log file:DIR]
      reads every record of the file log, checks its CRC and that indexes
      are dense; changes nothing. Exit 0 if healthy, 1 if corrupt.
`;
const REPAIR_USAGE = `  chronomad log repair --truncate-after N [--data-dir D | --log file:DIR]
      cuts the log so that N is its last index (deletes every later
      record). Stop the server first. Exit 0 once repaired.
`;
const INSPECT_USAGE = `  chronomad log inspect [--data-dir D | --log URL] [--json]
      reads every record of the log (file:DIR, kafka://host:port/topic or
      esdb://host:port?tls=false[&stream=NAME]),
      beside a running server, and prints how many there are, the first
      and last index, and how many of each event type; with --json, one
      JSON object {records, firstIndex, lastIndex, types: {Type: count}}.
      The record format is docs/log-format.md. Exit 0, or 1 if a record
      cannot be read.
`;
const OPTIONS = `
  --data-dir D      the server's data directory; the log is D/log
  --log URL         the log: file:DIR (default ./data/log), or for inspect
                    also kafka://host:port[,host:port]/topic or
                    esdb://host:port?tls=false[&stream=NAME]
  -h, --help        this help
`;
const USAGE = `Usage:\n${VERIFY_USAGE}${REPAIR_USAGE}${INSPECT_USAGE}${OPTIONS}`;
const ACTIONS = ["verify", "repair", "inspect"] as const;
type Action = (typeof ACTIONS)[number];
const ACTION_USAGE: Record<Action, string> = {
  verify: VERIFY_USAGE,
  repair: REPAIR_USAGE,
  inspect: INSPECT_USAGE,
};

class UsageError extends Error {}

type LogArgs =
  | { readonly action: "help"; readonly usage: string }
  | { readonly action: "verify"; readonly dir: string }
  | { readonly action: "repair"; readonly dir: string; readonly truncateAfter: number }
  | { readonly action: "inspect"; readonly url: string; readonly json: boolean };

/** `chronomad log ...`: resolves with the exit code (0 healthy/repaired, 1 corrupt or refused, 2 usage). */
export async function runLogCommand(args: readonly string[], out: NodeJS.WritableStream): Promise<number> {
  let parsed: LogArgs;
  try {
    parsed = parseArgs(args);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    out.write(`chronomad log: ${err.message}\n\n${USAGE}`);
    return 2;
  }
  try {
    switch (parsed.action) {
      case "help":
        out.write(parsed.usage);
        return 0;
      case "verify":
        return await verify(parsed.dir, out);
      case "repair":
        return await repair(parsed.dir, parsed.truncateAfter, out);
      case "inspect":
        return await inspect(parsed.url, parsed.json, out);
    }
  } catch (err) {
    if (err instanceof LogError) {
      out.write(`chronomad log ${parsed.action}: ${err.message}\n`);
      return err.code === "config" ? 2 : 1;
    }
    if (err instanceof CodecError) {
      out.write(`chronomad log ${parsed.action}: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

const isHelp = (arg: string) => arg === "--help" || arg === "-h";

function parseArgs(args: readonly string[]): LogArgs {
  const [action, ...rest] = args;
  if (action === undefined) throw new UsageError("missing subcommand");
  if (isHelp(action) || action === "help") return { action: "help", usage: USAGE };
  if (!(ACTIONS as readonly string[]).includes(action))
    throw new UsageError(`unknown subcommand "${action}"`);
  const act = action as Action;
  if (rest.some(isHelp)) return { action: "help", usage: `Usage:\n${ACTION_USAGE[act]}${OPTIONS}` };
  const flags = new Map<string, string>();
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === "--json") {
      if (act !== "inspect") throw new UsageError("--json is for inspect");
      if (flags.has(arg)) throw new UsageError("--json given twice");
      flags.set(arg, "");
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq >= 0 ? arg.slice(0, eq) : arg;
    if (!["--data-dir", "--log", "--truncate-after"].includes(name))
      throw new UsageError(`unknown argument "${arg}"`);
    if (name === "--truncate-after" && act !== "repair")
      throw new UsageError("--truncate-after is for repair");
    const value = eq >= 0 ? arg.slice(eq + 1) : rest[++i];
    if (value === undefined || value === "") throw new UsageError(`${name} needs a value`);
    if (flags.has(name)) throw new UsageError(`${name} given twice`);
    flags.set(name, value);
  }
  const dataDir = flags.get("--data-dir");
  const url = flags.get("--log");
  if (dataDir !== undefined && url !== undefined) throw new UsageError("give --data-dir or --log, not both");
  if (act === "inspect") {
    if (url !== undefined && !["file:", "kafka://", "esdb://"].some((scheme) => url.startsWith(scheme)))
      throw new UsageError(
        `--log ${url}: expected file:DIR, kafka://host:port[,host:port]/topic or esdb://host:port?tls=false`,
      );
    const logUrl = url ?? `file:${join(dataDir ?? join(".", "data"), "log")}`;
    return { action: act, url: logUrl, json: flags.has("--json") };
  }
  let dir = join(".", "data", "log");
  if (dataDir !== undefined) dir = join(dataDir, "log");
  if (url !== undefined) {
    if (!url.startsWith("file:"))
      throw new UsageError(`--log ${url}: only file: logs can be verified or repaired`);
    dir = url.slice("file:".length).replace(/^\/\/(?=\/)/, "");
    if (!dir) throw new UsageError(`--log ${url} names no directory (use file:DIR)`);
  }
  if (act === "verify") return { action: act, dir };
  const n = flags.get("--truncate-after");
  if (n === undefined) throw new UsageError("repair needs --truncate-after N");
  if (!/^\d+$/.test(n) || !Number.isSafeInteger(Number(n))) {
    throw new UsageError(`--truncate-after ${n}: expected a non-negative integer`);
  }
  return { action: act, dir, truncateAfter: Number(n) };
}

async function verify(dir: string, out: NodeJS.WritableStream): Promise<number> {
  const report = await verifyFileLog(dir);
  out.write(`log ${report.dir}\n`);
  for (const s of report.segments) {
    const range =
      s.records > 0 ? `${s.firstIndex}..${s.firstIndex + s.records - 1}` : `none (from ${s.firstIndex})`;
    const p = report.problem;
    const damaged = p?.file === s.file ? `  <- ${p.kind} at byte offset ${p.offset}` : "";
    out.write(`  ${basename(s.file)}  records ${range}  ${s.bytes} bytes${damaged}\n`);
    if (s.indexFileProblem !== undefined)
      out.write(`    index file: ${s.indexFileProblem} (rebuilt from the segment on the next open)\n`);
  }
  out.write(
    `segments: ${report.segments.length}, records: ${report.records}` +
      (report.records > 0 ? `, indexes ${report.firstIndex}..${report.lastIndex}` : "") +
      "\n",
  );
  const p = report.problem;
  if (!p) {
    out.write("OK: every record's CRC matches and indexes are dense\n");
    return 0;
  }
  if (p.kind === "torn-tail") {
    out.write(`OK with a torn tail (a crash during an append): ${p.message}\n`);
    return 0;
  }
  out.write(`CORRUPT: ${p.message}\n`);
  out.write(`records up to ${report.lastIndex} are intact; nothing after the damage was checked.\n`);
  out.write(
    `to keep them and drop everything after: chronomad log repair --truncate-after ${report.lastIndex} ` +
      `--log file:${dir}\n`,
  );
  return 1;
}

async function repair(dir: string, truncateAfter: number, out: NodeJS.WritableStream): Promise<number> {
  const report = await repairFileLog(dir, truncateAfter);
  out.write(`log ${report.dir}\n`);
  for (const f of report.removedSegments) out.write(`  removed ${basename(f)}\n`);
  if (report.truncated) {
    const t = report.truncated;
    out.write(
      `  truncated ${basename(t.file)} at byte offset ${t.offset} (${t.droppedBytes} bytes dropped)\n`,
    );
  }
  if (report.removedSegments.length === 0 && !report.truncated) out.write("  nothing to remove\n");
  out.write(`repaired: the last index is now ${report.lastIndex}\n`);
  return 0;
}

/** What `log inspect` reports; the Python decoder of test/docs prints the same object. */
export interface LogSummary {
  readonly records: number;
  /** Index of the first and last record read; null for an empty log. */
  readonly firstIndex: number | null;
  readonly lastIndex: number | null;
  /** Records per envelope `type`, keys in code-point order. */
  readonly types: Record<string, number>;
}

async function inspect(url: string, json: boolean, out: NodeJS.WritableStream): Promise<number> {
  const summary = await summarizeLog(url);
  if (json) {
    out.write(`${JSON.stringify(summary)}\n`);
    return 0;
  }
  out.write(`log ${url}\n`);
  out.write(`records: ${summary.records}\n`);
  if (summary.records > 0) out.write(`indexes: ${summary.firstIndex}..${summary.lastIndex}\n`);
  const width = Math.max(0, ...Object.keys(summary.types).map((t) => t.length));
  for (const [type, count] of Object.entries(summary.types)) out.write(`  ${type.padEnd(width)}  ${count}\n`);
  return 0;
}

/**
 * Reads every record the log holds now (opened read-only: beside a running
 * server, taking no lock and creating nothing) and counts them by type.
 */
export async function summarizeLog(url: string): Promise<LogSummary> {
  const empty: LogSummary = { records: 0, firstIndex: null, lastIndex: null, types: {} };
  // A directory without segments is an empty log; the read-only open calls it an error.
  if (url.startsWith("file:") && (await listSegmentFiles(fileLogDir(url))).length === 0) return empty;
  const log: EventLog = await openLog(url, {
    logger: pino({ level: "warn" }, process.stderr),
    readOnly: true,
  });
  try {
    const until = log.lastIndex();
    const counts = new Map<string, number>();
    let records = 0;
    let first: number | null = null;
    let last: number | null = null;
    if (until >= log.firstIndex()) {
      for await (const batch of log.read(log.firstIndex(), { untilIndex: until, maxBatch: 4096 })) {
        for (const r of batch) {
          const type = envelopeType(r.bytes, r.index);
          counts.set(type, (counts.get(type) ?? 0) + 1);
          first ??= r.index;
          last = r.index;
          records++;
        }
      }
    }
    if (records === 0) return empty;
    const types = Object.fromEntries([...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    return { records, firstIndex: first, lastIndex: last, types };
  } finally {
    await log.close();
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The envelope's `type`. Writers put it first (EnvelopeCodec.encode), so it
 * is read from the first key without decoding the rest; a record laid out
 * otherwise is decoded whole.
 */
function envelopeType(bytes: Uint8Array, index: number): string {
  const b = bytes[0];
  let pos = b !== undefined && b >= 0x80 && b <= 0x8f ? 1 : b === 0xde ? 3 : b === 0xdf ? 5 : -1;
  const key = pos > 0 ? readString(bytes, pos) : undefined;
  if (key && key.value === "type") {
    pos = key.end;
    const value = readString(bytes, pos);
    if (value) return value.value;
  }
  let env: unknown;
  try {
    env = unpackPlain(bytes);
  } catch (err) {
    throw new CodecError(`record ${index} is not valid msgpack: ${(err as Error).message}`);
  }
  const type = (env as { type?: unknown } | null)?.type;
  if (typeof type !== "string") throw new CodecError(`record ${index} is not an envelope (no string "type")`);
  return type;
}

function readString(bytes: Uint8Array, at: number): { value: string; end: number } | undefined {
  const b = bytes[at];
  if (b === undefined) return undefined;
  let start: number;
  let length: number;
  if (b >= 0xa0 && b <= 0xbf) {
    start = at + 1;
    length = b & 0x1f;
  } else if (b === 0xd9 && at + 1 < bytes.length) {
    start = at + 2;
    length = bytes[at + 1]!;
  } else if (b === 0xda && at + 2 < bytes.length) {
    start = at + 3;
    length = (bytes[at + 1]! << 8) | bytes[at + 2]!;
  } else return undefined;
  if (start + length > bytes.length) return undefined;
  try {
    return { value: utf8.decode(bytes.subarray(start, start + length)), end: start + length };
  } catch {
    return undefined;
  }
}
