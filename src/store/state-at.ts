import type { Logger } from "pino";
import type { Projections } from "../../projections/index.ts";
import type { EnvelopeCodec } from "../codec/envelope-codec.ts";
import type { EventLog } from "../log/event-log.ts";
import type { SnapshotFile } from "./snapshot-file.ts";
import { Store } from "./store.ts";

/** The tables as they were right after record `index` was applied. */
export interface PastState {
  readonly index: number;
  readonly store: Store;
  readonly tables: Projections["tables"];
}

export interface StateAtOptions {
  readonly log: EventLog;
  readonly codec: EnvelopeCodec;
  readonly createProjections: () => Projections;
  readonly snapshots?: SnapshotFile;
  readonly logger: Logger;
  /** How many past states to keep in memory for repeated reads. */
  readonly cacheSize?: number;
}

export class PastIndexError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "PastIndexError";
  }
}

/**
 * Builds the state at any index the log still holds: the nearest snapshot at
 * or before it, plus the records after that snapshot up to the index. The
 * most recent few are cached, and concurrent requests for one index share
 * one build.
 */
export class StateAt {
  private readonly cache = new Map<number, Promise<PastState>>();

  constructor(private readonly options: StateAtOptions) {}

  at(index: number): Promise<PastState> {
    const { log } = this.options;
    if (!Number.isSafeInteger(index) || index < 0) {
      return Promise.reject(new PastIndexError(`index must be a non-negative integer, not ${index}`, 400));
    }
    if (index > log.lastIndex()) {
      return Promise.reject(
        new PastIndexError(`index ${index} is ahead of the log (last index ${log.lastIndex()})`, 400),
      );
    }
    if (index > 0 && index < log.firstIndex() - 1) {
      return Promise.reject(
        new PastIndexError(
          `index ${index} is older than the log holds (first index ${log.firstIndex()})`,
          410,
        ),
      );
    }
    const cached = this.cache.get(index);
    if (cached) {
      // Refresh its place: the map's order is the eviction order.
      this.cache.delete(index);
      this.cache.set(index, cached);
      return cached;
    }
    const built = this.build(index);
    this.cache.set(index, built);
    built.catch(() => this.cache.delete(index));
    while (this.cache.size > (this.options.cacheSize ?? 4))
      this.cache.delete(this.cache.keys().next().value!);
    return built;
  }

  private async build(index: number): Promise<PastState> {
    const projections = this.options.createProjections();
    const store = new Store({
      log: this.options.log,
      codec: this.options.codec,
      projections: projections.all,
      logger: this.options.logger,
      snapshots: this.options.snapshots,
    });
    await store.start({ until: index });
    return { index: store.appliedIndex, store, tables: projections.tables };
  }
}
