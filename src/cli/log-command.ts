import { basename, join } from "node:path";
import { LogError } from "../log/event-log.ts";
import { repairFileLog, verifyFileLog } from "../log/file/index.ts";

const USAGE = `Usage:
  chronomad log verify [--data-dir D | --log file:DIR]
  chronomad log repair --truncate-after N [--data-dir D | --log file:DIR]

  verify   reads every record of the file log, checks its CRC and that indexes
           are dense; changes nothing. Exit 0 if healthy, 1 if corrupt.
  repair   cuts the log so that N is its last index (deletes every later
           record). Stop the server first. Exit 0 once repaired.

  --data-dir D      the server's data directory; the log is D/log
  --log file:DIR    the log directory itself (default ./data/log)
`;

class UsageError extends Error {}

interface LogArgs {
  readonly action: "verify" | "repair";
  readonly dir: string;
  readonly truncateAfter?: number;
}

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
    return parsed.action === "verify"
      ? await verify(parsed.dir, out)
      : await repair(parsed.dir, parsed.truncateAfter!, out);
  } catch (err) {
    if (err instanceof LogError) {
      out.write(`chronomad log ${parsed.action}: ${err.message}\n`);
      return err.code === "config" ? 2 : 1;
    }
    throw err;
  }
}

function parseArgs(args: readonly string[]): LogArgs {
  const [action, ...rest] = args;
  if (action !== "verify" && action !== "repair") {
    throw new UsageError(action === undefined ? "missing subcommand" : `unknown subcommand "${action}"`);
  }
  const flags = new Map<string, string>();
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    const eq = arg.indexOf("=");
    const name = eq >= 0 ? arg.slice(0, eq) : arg;
    if (!["--data-dir", "--log", "--truncate-after"].includes(name))
      throw new UsageError(`unknown argument "${arg}"`);
    if (name === "--truncate-after" && action !== "repair")
      throw new UsageError("--truncate-after is for repair");
    const value = eq >= 0 ? arg.slice(eq + 1) : rest[++i];
    if (value === undefined || value === "") throw new UsageError(`${name} needs a value`);
    if (flags.has(name)) throw new UsageError(`${name} given twice`);
    flags.set(name, value);
  }
  const dataDir = flags.get("--data-dir");
  const url = flags.get("--log");
  if (dataDir !== undefined && url !== undefined) throw new UsageError("give --data-dir or --log, not both");
  let dir = join(".", "data", "log");
  if (dataDir !== undefined) dir = join(dataDir, "log");
  if (url !== undefined) {
    if (!url.startsWith("file:"))
      throw new UsageError(`--log ${url}: only file: logs can be verified or repaired`);
    dir = url.slice("file:".length).replace(/^\/\/(?=\/)/, "");
    if (!dir) throw new UsageError(`--log ${url} names no directory (use file:DIR)`);
  }
  if (action === "verify") return { action, dir };
  const n = flags.get("--truncate-after");
  if (n === undefined) throw new UsageError("repair needs --truncate-after N");
  if (!/^\d+$/.test(n) || !Number.isSafeInteger(Number(n))) {
    throw new UsageError(`--truncate-after ${n}: expected a non-negative integer`);
  }
  return { action, dir, truncateAfter: Number(n) };
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
