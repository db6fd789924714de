import type { Envelope } from "../../streams/event-schema.ts";
import type { AnyTable, IndexedRow, Table } from "./table.ts";

/** One row change, as published on the store's change$. */
export interface Change<R = unknown> {
  readonly table: string;
  readonly key: string;
  readonly before: R | undefined;
  readonly after: R | undefined;
  readonly index: number;
  /** The event that caused it, and its envelope time (ms): the event stream names changes by them. */
  readonly event: string;
  readonly at: number;
  /** The whole record (shared by all its changes): its actor, cause and schema version. */
  readonly envelope: Envelope;
}

/** What applying one record did: the answer a waiting writer gets. */
export type Outcome =
  | { readonly index: number; readonly status: "applied" }
  | { readonly index: number; readonly status: "rejected"; readonly code: number; readonly reason: string };

/**
 * What a projection may do while it applies a record. Rows are immutable
 * values: a projection builds a new row and puts it, never edits one in place
 * (snapshots and change$ subscribers hold references to the old ones).
 */
export interface ApplyContext {
  /** The record's log index: the CreateIndex/ModifyIndex of what it changes. */
  readonly index: number;
  /** Stores `row`; returns the row it replaced. */
  put<R extends IndexedRow>(table: Table<R>, row: NoInfer<R>): R | undefined;
  /** Removes the row with `key`; returns it. */
  delete<R extends IndexedRow>(table: Table<R>, key: string): R | undefined;
  /** Marks `table` changed at this index though no row changed (Nomad bumps table indexes on no-op writes). */
  touch(table: AnyTable): void;
  /**
   * Records that this event is refused at apply (the second validation), with
   * an HTTP-like code. Must be called before anything is put or deleted.
   */
  reject(code: number, reason: string): void;
  readonly rejected: boolean;
}

/**
 * A read model: tables and the pure function that folds one event into them.
 * `evolve` must not read the clock, randomness, the environment or the
 * network; everything it needs is in the envelope or the tables.
 */
export interface Projection {
  readonly name: string;
  /** Bump when evolve or the row shape changes: the snapshot part is dropped and rebuilt from the log. */
  readonly version: number;
  readonly tables: readonly AnyTable[];
  /** Names of other projections whose tables evolve reads; they are rebuilt together. */
  readonly reads?: readonly string[];
  /** Event types it handles; others are not passed to evolve. */
  readonly handles: ReadonlySet<string>;
  evolve(ctx: ApplyContext, event: Envelope): void;
  /**
   * A check every record passes, whatever its type, before any projection
   * sees it: a refusal is recorded as the record's rejection and no
   * projection applies it. Pure and deterministic, like evolve; it must decide
   * as of `index` even when its own tables are ahead (restored from a newer
   * snapshot while another projection is rebuilt from the log).
   */
  admit?(event: Envelope, index: number): Refusal | undefined;
  /**
   * Tables of other projections whose row changes it folds in (an audit
   * trail derives from changes, not from events). `observe` runs within the
   * same apply, right after each change; it is pure like evolve.
   */
  readonly observes?: ReadonlySet<string>;
  observe?(ctx: ApplyContext, change: Change, event: Envelope): void;
}

/** Why a record is refused at apply: an HTTP-like code and a reason. */
export interface Refusal {
  readonly code: number;
  readonly reason: string;
}
