import { copyFile, mkdir, readFile, rename, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { pino } from "pino";
import { createProjections } from "../../projections/index.ts";
import { allSchemas } from "../../streams/index.ts";
import { EnvelopeCodec } from "../codec/envelope-codec.ts";
import { LogError } from "../log/event-log.ts";
import { openLog } from "../log/open-log.ts";
import { decodeSnapshot, SnapshotFile, snapshotFileName } from "../store/snapshot-file.ts";
import { Store } from "../store/store.ts";

const USAGE = `Usage:
  chronomad snapshot save    [--data-dir D] [--log URL] [--out FILE]
  chronomad snapshot restore FILE [--data-dir D] [--log URL]
  chronomad snapshot inspect FILE

  save      rebuilds the tables from the log (starting from the newest
            snapshot in D/snapshots) and writes a snapshot of them, into
            D/snapshots or to --out FILE. Stop the server first, or use a copy.
  restore   checks FILE and installs it in D/snapshots, so the next start
            replays only the records after it. The log must hold the
            snapshot's index: a snapshot never replaces the log.
  inspect   prints a snapshot's index, projections, tables and row counts.

  --data-dir D   the server's data directory (default ./data)
  --log URL      the server's log (default file:D/log)
  -h, --help     print this and exit (also after a subcommand)
`;

/** `chronomad snapshot ...`: resolves with the exit code (0 ok, 1 refused, 2 usage). */
export async function runSnapshotCommand(
  args: readonly string[],
  out: NodeJS.WritableStream,
): Promise<number> {
  const [action, ...rest] = args;
  if (action === "--help" || action === "-h") {
    out.write(USAGE);
    return 0;
  }
  let values: { "data-dir"?: string; log?: string; out?: string; help?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: rest,
      options: {
        "data-dir": { type: "string" },
        log: { type: "string" },
        out: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: true,
      strict: true,
    }));
    if (values.help) {
      out.write(USAGE);
      return 0;
    }
    if (action !== "save" && action !== "restore" && action !== "inspect") {
      throw new Error(action === undefined ? "missing subcommand" : `unknown subcommand "${action}"`);
    }
    if (action !== "save" && positionals.length !== 1) throw new Error(`snapshot ${action} takes one FILE`);
    if (action === "save" && positionals.length > 0)
      throw new Error(`unexpected argument "${positionals[0]}"`);
  } catch (err) {
    out.write(`chronomad snapshot: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const dataDir = resolve(values["data-dir"] ?? "./data");
  const logUrl = values.log ?? `file:${join(dataDir, "log")}`;
  const logger = pino({ level: "warn" }, process.stderr);
  const snapshots = new SnapshotFile(join(dataDir, "snapshots"), logger);
  try {
    switch (action) {
      case "inspect":
        return await inspect(positionals[0]!, out);
      case "save":
        return await save(logUrl, snapshots, values.out, out);
      case "restore":
        return await restore(positionals[0]!, logUrl, snapshots, out);
    }
  } catch (err) {
    if (err instanceof LogError) {
      out.write(`chronomad snapshot ${action}: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

async function inspect(file: string, out: NodeJS.WritableStream): Promise<number> {
  let data: ReturnType<typeof decodeSnapshot>;
  try {
    data = decodeSnapshot(await readFile(file));
  } catch (err) {
    out.write(`chronomad snapshot inspect: ${file}: ${(err as Error).message}\n`);
    return 1;
  }
  const { size } = await stat(file);
  out.write(
    `snapshot ${file}\n  index ${data.index}\n  size ${size.toLocaleString("en-US")} bytes\n  checksum ok\n`,
  );
  for (const p of data.projections) {
    out.write(`  projection ${p.name} v${p.version}\n`);
    for (const t of p.tables) {
      out.write(`    table ${t.name}: ${t.rows.length.toLocaleString("en-US")} rows, index ${t.index}\n`);
    }
  }
  return 0;
}

async function save(
  logUrl: string,
  snapshots: SnapshotFile,
  to: string | undefined,
  out: NodeJS.WritableStream,
) {
  const logger = pino({ level: "warn" }, process.stderr);
  const log = await openLog(logUrl, { logger });
  try {
    const store = new Store({
      log,
      codec: new EnvelopeCodec(allSchemas),
      projections: createProjections().all,
      logger,
      snapshots,
    });
    await store.start({ until: log.lastIndex() });
    const index = store.appliedIndex;
    if (to) {
      // Written beside the target through the same atomic path, then moved there.
      const staging = new SnapshotFile(join(resolve(to), ".."), logger, Number.POSITIVE_INFINITY);
      await store.snapshot(staging);
      await rename(staging.pathOf(index), resolve(to));
    } else {
      await store.snapshot();
    }
    out.write(`snapshot saved at index ${index}: ${to ? resolve(to) : snapshots.pathOf(index)}\n`);
    return 0;
  } finally {
    await log.close();
  }
}

async function restore(file: string, logUrl: string, snapshots: SnapshotFile, out: NodeJS.WritableStream) {
  let index: number;
  try {
    index = decodeSnapshot(await readFile(file)).index;
  } catch (err) {
    out.write(`chronomad snapshot restore: ${file}: ${(err as Error).message}\n`);
    return 1;
  }
  const log = await openLog(logUrl, { logger: pino({ level: "warn" }, process.stderr) });
  const last = log.lastIndex();
  await log.close();
  if (index > last) {
    out.write(
      `chronomad snapshot restore: the snapshot is at index ${index} but the log ends at ${last}; restore the log first (chronomad replay)\n`,
    );
    return 1;
  }
  await mkdir(snapshots.dir, { recursive: true });
  const target = snapshots.pathOf(index);
  await copyFile(file, `${target}.tmp`);
  await rename(`${target}.tmp`, target);
  out.write(`snapshot at index ${index} installed as ${snapshotFileName(index)} in ${snapshots.dir}\n`);
  return 0;
}
