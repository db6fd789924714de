import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import type { Subscription } from "rxjs";
import type { HistoryEntry, HistoryRow } from "../../projections/history.ts";
import type { Store } from "../store/store.ts";
import { HistoryFile } from "./history-file.ts";

/** Longest a request's history read holds the event loop before it yields. */
const READ_SLICE_MS = 3;

/** Appended bytes after which the pointers are checkpointed again, so a crash costs a short scan. */
const CHECKPOINT_BYTES = 64 * 1024 * 1024;

/**
 * Every object's history entries, kept on disk (src/history/history-file.ts)
 * and fed from the store's changes of the `history` table: the projection
 * computes each change's entries (a row's `Latest`), this appends them. Side
 * effects live here, not in projections/.
 */
export class HistoryStore {
  private subscriptions: Subscription[] = [];
  private checkpointing: Promise<void> | undefined;

  private constructor(
    readonly file: HistoryFile,
    private readonly logger: Logger,
    /** A directory made for this store alone (memory log, read-only server): removed at close. */
    private readonly ownDir: string | undefined,
    private readonly rebuildAsked: boolean,
  ) {}

  /**
   * Opens the history in `dir` (beside the snapshots), or in a temporary
   * directory of its own when there is none (a memory log, a read-only
   * server, which writes nothing to its data dir).
   */
  static async open(
    dir: string | undefined,
    logger: Logger,
    retention: { readonly ms: number; readonly now: number } = { ms: 0, now: 0 },
  ): Promise<HistoryStore> {
    const ownDir = dir === undefined ? await mkdtemp(join(tmpdir(), "chronomad-history-")) : undefined;
    const { file, rebuild } = await HistoryFile.open(dir ?? ownDir!, logger);
    if (retention.ms > 0 && !rebuild) {
      // history_retention: entries older than the cutoff leave the derived file; the log keeps them.
      const cutoff = new Date(retention.now - retention.ms).toISOString();
      const started = performance.now();
      const { kept, dropped } = await file.compact((e) => e.Time >= cutoff);
      logger.info(
        { cutoff, kept, dropped, ms: Math.round(performance.now() - started) },
        "history_retention: entries older than the cutoff dropped from the history store",
      );
    }
    return new HistoryStore(file, logger, ownDir, rebuild);
  }

  /**
   * The projections `store` must rebuild from the log for this history to be
   * whole: the history's when the file was rebuilt or is behind the
   * snapshot (its entries up to the snapshot would be missing). Pass as the
   * Store's `rebuild` option.
   */
  readonly rebuild = (snapshotIndex: number): readonly string[] => {
    if (!this.rebuildAsked && this.file.applied >= snapshotIndex) return [];
    this.logger.warn(
      { historyIndex: this.file.applied, snapshotIndex },
      "history file behind the snapshot: rebuilding the history projection from the log",
    );
    return ["history"];
  };

  /** Feeds the file from `store`'s changes; call before the store starts. */
  attach(store: Store, lastLogIndex: number): void {
    if (this.file.applied > lastLogIndex) {
      // Written from a longer log (the log was replaced by an older copy): its entries may not be this log's.
      this.logger.warn(
        { historyIndex: this.file.applied, lastLogIndex },
        "history file ahead of the log: rebuilding it from the log",
      );
      this.file.reset();
    }
    this.subscriptions.push(
      store.change$.subscribe((change) => {
        if (change.table !== "history" || change.after === undefined) return;
        const row = change.after as HistoryRow;
        this.file.append(row.Key, change.index, row.Latest);
      }),
      store.applied$.subscribe((batch) => {
        this.file.markApplied(batch.index);
        if (this.checkpointing === undefined && this.file.bytesSinceCheckpoint >= CHECKPOINT_BYTES) {
          this.checkpointing = this.file
            .checkpoint()
            .catch((err: Error) => this.logger.error({ err }, "history checkpoint failed"))
            .finally(() => {
              this.checkpointing = undefined;
            });
        }
      }),
    );
  }

  /** The object's entries in log order; with `atIndex`, those up to that index. */
  entries(key: string, atIndex?: number): HistoryEntry[] {
    const all = this.file.entries(key);
    if (atIndex === undefined) return all;
    let end = all.length;
    while (end > 0 && all[end - 1]!.Index > atIndex) end--;
    return end === all.length ? all : all.slice(0, end);
  }

  /**
   * As `entries`, read in slices of a few milliseconds for a request: an
   * object's chain is one read and decode per chunk, and a long history
   * must not hold the event loop. Chunks never change once written and the
   * chain is followed from the newest pointer taken at the start, so
   * appends meanwhile do not disturb the read (they are after it).
   */
  async entriesInSlices(key: string, atIndex?: number): Promise<HistoryEntry[]> {
    const chunks: (readonly HistoryEntry[])[] = [];
    let slice = performance.now();
    for (const chunk of this.file.chunksNewestFirst(key)) {
      if (atIndex === undefined || chunk.index <= atIndex) chunks.push(chunk.entries);
      if (performance.now() - slice > READ_SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        slice = performance.now();
      }
    }
    const entries: HistoryEntry[] = [];
    for (let i = chunks.length - 1; i >= 0; i--) for (const e of chunks[i]!) entries.push(e);
    return entries;
  }

  /**
   * The newest entries of the object (up to `atIndex`), in log order: at
   * least `least` of them when it has that many, and every entry of the
   * oldest index taken, so an entry's position within its index (the `n` of
   * a page token) is the same as in the whole history. Reads only the
   * chunks it needs: a reverse page of a long history costs a few reads.
   */
  newest(key: string, least: number, atIndex?: number): HistoryEntry[] {
    const chunks: (readonly HistoryEntry[])[] = [];
    let taken = 0;
    let boundary = Number.POSITIVE_INFINITY;
    for (const chunk of this.file.chunksNewestFirst(key)) {
      if (atIndex !== undefined && chunk.index > atIndex) continue;
      if (taken >= least && chunk.index < boundary) break;
      chunks.push(chunk.entries);
      taken += chunk.entries.length;
      if (taken >= least && boundary === Number.POSITIVE_INFINITY) boundary = chunk.index;
    }
    const entries: HistoryEntry[] = [];
    for (let i = chunks.length - 1; i >= 0; i--) for (const e of chunks[i]!) entries.push(e);
    return entries;
  }

  async close(): Promise<void> {
    for (const s of this.subscriptions) s.unsubscribe();
    this.subscriptions = [];
    await this.checkpointing;
    await this.file.close();
    if (this.ownDir !== undefined) await rm(this.ownDir, { recursive: true, force: true });
  }
}
