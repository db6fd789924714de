import { parseArgs } from "node:util";
import { pino } from "pino";
import { createProjections } from "../../projections/index.ts";
import { allSchemas } from "../../streams/index.ts";
import { EnvelopeCodec } from "../codec/envelope-codec.ts";
import { ESDB_APPEND_LIMITS, ESDB_EVENT_OVERHEAD, EsdbLog, parseEsdbUrl } from "../log/esdb/index.ts";
import { type EventLog, LogError, type LogRecord } from "../log/event-log.ts";
import { fileLogDir, openLog } from "../log/open-log.ts";
import { StateAt } from "../store/state-at.ts";
import { Progress } from "./progress.ts";

const USAGE = `Usage: chronomad replay --from <log-url> --to <log-url> [--until-index N] [--verify]

Copies a cluster's history into another log (file:DIR, kafka://host:port/topic,
esdb://host:port?tls=false[&stream=NAME]), record for record, between any two
of them, so that a server started on the copy rebuilds the same state. Interrupted copies resume where the target ends, after checking that
the target is a prefix of the source.

The source is opened read-only: it may be a file log a running server holds
(the copy takes the records up to its last complete one and never locks,
repairs or writes to it). A source that does not exist (a missing directory,
one without segment files, a Kafka topic or EventStoreDB stream that is not
there) is an error.

  --from URL          the log to read
  --to URL            the log to write (empty, or an earlier copy of --from)
  --until-index N     stop after index N (default: the source's last index;
                      an index past the source's end is an error)
  --verify            rebuild the tables of both logs at the last copied index
                      and compare their hashes
  -h, --help          print this and exit
`;

const BATCH = 4096;

/** `chronomad replay`: resolves with the exit code (0 done, 1 refused or mismatch, 2 usage). */
export async function runReplay(args: readonly string[], out: NodeJS.WritableStream): Promise<number> {
  let opts: { from: string; to: string; until?: number; verify: boolean };
  try {
    const { values } = parseArgs({
      args: [...args],
      options: {
        from: { type: "string" },
        to: { type: "string" },
        "until-index": { type: "string" },
        verify: { type: "boolean", default: false },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    });
    if (values.help) {
      out.write(USAGE);
      return 0;
    }
    if (!values.from || !values.to) throw new Error("--from and --to are required");
    if (sameLog(values.from, values.to)) throw new Error("--from and --to name the same log");
    const until = values["until-index"] === undefined ? undefined : Number(values["until-index"]);
    if (until !== undefined && (!Number.isSafeInteger(until) || until < 1)) {
      throw new Error(`--until-index must be a positive integer, not "${values["until-index"]}"`);
    }
    opts = { from: values.from, to: values.to, until, verify: values.verify ?? false };
  } catch (err) {
    out.write(`chronomad replay: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }

  const logger = pino({ level: "warn" }, process.stderr);
  let source: EventLog | undefined;
  let target: EventLog | undefined;
  try {
    // Read-only: the source may be a log a running server holds, and must already exist.
    source = await openLog(opts.from, { logger, readOnly: true }).catch((err: unknown) => {
      throw err instanceof LogError ? new LogError(`source ${opts.from}: ${err.message}`, err.code) : err;
    });
    const end = source.lastIndex();
    if (end === 0) {
      out.write(`chronomad replay: the source ${source.url} holds no records: nothing to copy\n`);
      return 1;
    }
    if (opts.until !== undefined && opts.until > end) {
      out.write(
        `chronomad replay: --until-index ${opts.until} is past the end of the source ${source.url}, ` +
          `which ends at index ${end}; nothing was copied\n`,
      );
      return 1;
    }
    target = await openLog(opts.to, { logger });
    const until = opts.until ?? end;
    const copied = await copy(source, target, until, out);
    if (copied === undefined) return 1;
    if (opts.verify) return (await verify(source, target, until, out)) ? 0 : 1;
    return 0;
  } catch (err) {
    if (err instanceof LogError) {
      out.write(`chronomad replay: ${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    await target?.close();
    await source?.close();
  }
}

/** Whether two log URLs name one log: the same string, or two spellings of one file log directory. */
function sameLog(a: string, b: string): boolean {
  if (a === b) return true;
  if (a.startsWith("esdb://") && b.startsWith("esdb://")) {
    try {
      const [x, y] = [parseEsdbUrl(a), parseEsdbUrl(b)];
      const nodes = (address: typeof x) => address.connectionString.replace(/\?.*$/, "");
      return x.stream === y.stream && nodes(x) === nodes(y);
    } catch {
      return false;
    }
  }
  if (!a.startsWith("file:") || !b.startsWith("file:")) return false;
  try {
    return fileLogDir(a) === fileLogDir(b);
  } catch {
    // A URL naming no directory is reported when it is opened.
    return false;
  }
}

/** Copies (resuming) up to `until`; undefined when the target cannot be a copy of the source. */
async function copy(source: EventLog, target: EventLog, until: number, out: NodeJS.WritableStream) {
  const start = target.lastIndex();
  if (start > 0) {
    if (start > until) {
      out.write(
        `chronomad replay: the target already holds ${start} records, more than the ${until} to copy\n`,
      );
      return undefined;
    }
    const [mine, theirs] = await Promise.all([recordAt(target, start), recordAt(source, start)]);
    if (!mine || !theirs || !Buffer.from(mine).equals(Buffer.from(theirs))) {
      out.write(
        `chronomad replay: the target's record ${start} differs from the source's: it is not a copy of it\n`,
      );
      return undefined;
    }
    out.write(`replay: resuming after index ${start}\n`);
  }
  const progress = new Progress("replay", until - start, out);
  let next = start + 1;
  for await (const batch of source.read(next, { maxBatch: BATCH, untilIndex: until })) {
    for (const run of appendRuns(batch, target)) {
      const { first } = await target.append(run.map((r) => r.bytes));
      // Indexes must line up one to one; anyone else writing to the target breaks that.
      if (first !== next)
        throw new LogError(
          `target gave index ${first} to source record ${next}: is something else writing to it?`,
          "range",
        );
      next += run.length;
      progress.advance(run.length);
    }
  }
  progress.done();
  out.write(`replay: copied ${next - 1 - start} records; the target ends at index ${target.lastIndex()}\n`);
  return next - 1;
}

/**
 * How a read batch is appended to the target: whole (one append, one
 * fsync for a file log), except to EventStoreDB, where an append is one
 * appendToStream call that the server refuses past its MaxAppendSize.
 */
function appendRuns(batch: LogRecord[], target: EventLog): LogRecord[][] {
  if (!(target instanceof EsdbLog)) return [batch];
  return boundedRuns(batch, { ...ESDB_APPEND_LIMITS, overheadPerRecord: ESDB_EVENT_OVERHEAD });
}

/**
 * Consecutive runs of `records`, each within `maxBatchBytes` (counting
 * `overheadPerRecord` for each) and `maxBatchRecords`; a larger record alone.
 */
export function boundedRuns(
  records: readonly LogRecord[],
  limits: { maxBatchBytes: number; maxBatchRecords: number; overheadPerRecord: number },
): LogRecord[][] {
  const runs: LogRecord[][] = [];
  let run: LogRecord[] = [];
  let bytes = 0;
  for (const record of records) {
    const size = record.bytes.byteLength + limits.overheadPerRecord;
    if (run.length > 0 && (bytes + size > limits.maxBatchBytes || run.length === limits.maxBatchRecords)) {
      runs.push(run);
      run = [];
      bytes = 0;
    }
    run.push(record);
    bytes += size;
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

async function recordAt(log: EventLog, index: number): Promise<Uint8Array | undefined> {
  for await (const batch of log.read(index, { maxBatch: 1, untilIndex: index })) return batch[0]?.bytes;
  return undefined;
}

async function verify(source: EventLog, target: EventLog, index: number, out: NodeJS.WritableStream) {
  const codec = new EnvelopeCodec(allSchemas);
  const logger = pino({ level: "warn" }, process.stderr);
  const hashAt = async (log: EventLog) => {
    const past = await new StateAt({ log, codec, createProjections, logger }).at(index);
    const hash = past.store.hash();
    await past.store.stop();
    return hash;
  };
  const [a, b] = [await hashAt(source), await hashAt(target)];
  out.write(`verify: at index ${index}\n  source tables ${a}\n  target tables ${b}\n`);
  out.write(a === b ? "verify: equal\n" : "verify: DIFFERENT\n");
  return a === b;
}
