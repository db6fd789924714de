import { Subject } from "rxjs";
import type { EventLog } from "../../src/log/event-log.ts";
import type { Change } from "../../src/store/projection.ts";
import type { AppliedBatch } from "../../src/store/store.ts";

/**
 * The hub fed by hand: a store's change$ and applied$ as plain subjects, so
 * a test decides what each record changes and when batches end.
 */
export class FakeStore {
  readonly changes = new Subject<Change>();
  readonly applied = new Subject<AppliedBatch>();
  readonly change$ = this.changes.asObservable();
  readonly applied$ = this.applied.asObservable();
  constructor(public appliedIndex = 0) {}
  /** Only the replay of the past reads it: the tests make every replay refuse. */
  readonly log = { firstIndex: () => 1_000_000 } as unknown as EventLog;

  /** One batch of records, each record's changes in order. */
  batch(records: readonly (readonly Change[])[]): void {
    for (const changes of records) {
      for (const c of changes) this.changes.next(c);
      this.appliedIndex = Math.max(this.appliedIndex, changes[0]?.index ?? this.appliedIndex);
    }
    this.applied.next({ index: this.appliedIndex, tables: new Set(), records: [] });
  }

  /** Records that changed nothing published, up to `index`. */
  progress(index: number): void {
    this.appliedIndex = index;
    this.applied.next({ index, tables: new Set(), records: [] });
  }
}
