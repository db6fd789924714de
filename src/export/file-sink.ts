import { open, readFile, rename, truncate } from "node:fs/promises";
import { dirname } from "node:path";
import { packPlain } from "../codec/envelope-codec.ts";
import type { FlatRecord } from "./flat-records.ts";
import type { ExportFormat, ExportSink } from "./sink.ts";

interface Position {
  readonly index: number;
  readonly bytes: number;
}

/**
 * Records appended to one file: NDJSON, or a stream of plain msgpack maps.
 * Beside it, `<file>.position` holds the last delivered index and the file
 * length at that point; it is replaced atomically after the records are
 * fsynced. On open, bytes past that length (a batch cut short by a crash)
 * are cut off and written again, so each record ends up in the file once.
 */
export class FileSink implements ExportSink {
  private constructor(
    private readonly path: string,
    private readonly format: ExportFormat,
    private at: Position,
  ) {}

  static async open(path: string, format: ExportFormat): Promise<FileSink> {
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
    return new FileSink(path, format, at);
  }

  async position(): Promise<number> {
    return this.at.index;
  }

  async commit(records: readonly FlatRecord[], index: number): Promise<void> {
    const chunks = records.map((r) =>
      this.format === "json" ? Buffer.from(`${JSON.stringify(r)}\n`) : Buffer.from(packPlain(r)),
    );
    const bytes = Buffer.concat(chunks);
    const fh = await open(this.path, "a");
    try {
      await fh.write(bytes);
      await fh.datasync();
    } finally {
      await fh.close();
    }
    const next = { index, bytes: this.at.bytes + bytes.length };
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

  async close(): Promise<void> {}
}
