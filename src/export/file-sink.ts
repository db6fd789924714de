import { open, readFile, rename, truncate } from "node:fs/promises";
import { dirname } from "node:path";
import { packPlain } from "../codec/envelope-codec.ts";
import { claimPidLock } from "../util/pid-lock.ts";
import {
  type ExportFormat,
  type ExportMessage,
  type ExportSink,
  ExportTargetBusy,
  type SinkPosition,
} from "./sink.ts";

interface Position {
  readonly index: number;
  readonly bytes: number;
  readonly clusterId?: string;
}

/**
 * Rows appended to one file: NDJSON, or a stream of plain msgpack maps.
 * Beside it, `<file>.position` holds the last delivered index, the file
 * length at that point and the cluster the rows come from; it is replaced
 * atomically after the rows are fsynced. On open, bytes past that length (a
 * batch cut short by a crash) are cut off and written again, so each row
 * ends up in the file once. `<file>.lock` keeps a second exporter out.
 */
export class FileSink implements ExportSink {
  private constructor(
    private readonly path: string,
    private readonly format: ExportFormat,
    private at: Position,
    private readonly release: () => Promise<void>,
  ) {}

  static async open(path: string, format: ExportFormat): Promise<FileSink> {
    const release = await claimPidLock(
      `${path}.lock`,
      (pid) =>
        new ExportTargetBusy(
          `${path} is being exported to by process ${pid} (${path}.lock): one exporter per target; stop that one first`,
        ),
    );
    try {
      let at: Position = { index: 0, bytes: 0 };
      try {
        at = JSON.parse(await readFile(`${path}.position`, "utf8")) as Position;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      }
      const fh = await open(path, "a+");
      const { size } = await fh.stat();
      await fh.close();
      if (size < at.bytes) {
        throw new Error(
          `${path} is shorter (${size} bytes) than its position file says (${at.bytes}): it was changed by hand`,
        );
      }
      if (size > at.bytes) await truncate(path, at.bytes);
      return new FileSink(path, format, at, release);
    } catch (err) {
      await release();
      throw err;
    }
  }

  async position(): Promise<SinkPosition> {
    return this.at;
  }

  async commit(messages: readonly ExportMessage[], index: number, clusterId: string): Promise<void> {
    const chunks = messages.map((m) =>
      this.format === "json" ? Buffer.from(`${JSON.stringify(m.value)}\n`) : Buffer.from(packPlain(m.value)),
    );
    const bytes = Buffer.concat(chunks);
    const fh = await open(this.path, "a");
    try {
      await fh.write(bytes);
      await fh.datasync();
    } finally {
      await fh.close();
    }
    const next: Position = { index, bytes: this.at.bytes + bytes.length, clusterId };
    const tmp = `${this.path}.position.tmp`;
    const ph = await open(tmp, "w");
    try {
      await ph.write(JSON.stringify(next));
      await ph.datasync();
    } finally {
      await ph.close();
    }
    await rename(tmp, `${this.path}.position`);
    const dir = await open(dirname(this.path), "r");
    await dir.sync().finally(() => dir.close());
    this.at = next;
  }

  async close(): Promise<void> {
    await this.release();
  }
}
