import { createHash } from "node:crypto";
import type { Logger } from "pino";
import { type Observable, Subject, type Subscription } from "rxjs";
import type { Envelope } from "../../streams/event-schema.ts";
import { type EnvelopeCodec, packPlain } from "../codec/envelope-codec.ts";
import type { AppendResult, EventLog, LogRecord } from "../log/event-log.ts";
import { mapped } from "../util/mapped.ts";
import { Fanout } from "./fanout.ts";
import { loopTurn } from "./loop-turn.ts";
import type { ApplyContext, Change, Outcome, Projection, Refusal } from "./projection.ts";
import type { SnapshotData, SnapshotFile } from "./snapshot-file.ts";
import type { AnyTable, IndexedRow, Table } from "./table.ts";
import { Waiters } from "./waiters.ts";

export interface StoreOptions {
  readonly log: EventLog;
  readonly codec: EnvelopeCodec;
  readonly projections: readonly Projection[];
  readonly logger: Logger;
  /** Where snapshots are kept; none means every start replays the whole log. */
  readonly snapshots?: SnapshotFile;
  /** Take a snapshot after this many applied records (0: only at shutdown). */
  readonly snapshotEvery?: number;
  /**
   * Projections to rebuild from the log although the snapshot holds them,
   * asked once the snapshot's index is known: those that feed a derived
   * store kept outside the snapshot (src/history/) which is behind it.
   */
  readonly rebuild?: (snapshotIndex: number) => readonly string[];
  /** How long applying the tail may hold the event loop at a time; APPLY_SLICE_MS unless set. */
  readonly applySliceMs?: number;
}

/** After each applied batch: the new applied index, the tables it changed and the records, as the log gave them. */
export interface AppliedBatch {
  readonly index: number;
  readonly tables: ReadonlySet<string>;
  /** The batch's records (some may have been applied before: those at or below the previous index). */
  readonly records: readonly LogRecord[];
}

const REJECTIONS_KEPT = 16_384;

/**
 * How long applying the log's tail may hold the event loop at a time. A
 * batch that takes longer (a large plan, a bulk write) is applied over
 * several turns, the rest waiting for the next one, so heartbeats and reads
 * arriving meanwhile are served between records. Readers only ever see a
 * prefix of the log: every record is applied whole.
 */
export const APPLY_SLICE_MS = 1;

/**
 * Wires the log to the projections: applies every record strictly in index
 * order, publishes what changed, and lets writers wait for the outcome of
 * their own records (read-your-writes).
 */
export class Store {
  private readonly projections: readonly Projection[];
  /** Projections with an `admit` check, which every record passes before any evolve. */
  private readonly gates: readonly Projection[];
  /** Per projection, the last index it applied (they differ while one is rebuilt from the log). */
  private readonly slots = new Map<string, Slot>();
  private readonly byType = new Map<string, Slot[]>();
  private readonly observers = new Map<string, Slot[]>();
  private readonly tables = new Map<string, AnyTable>();
  /** Not a Subject: see Fanout (every change of every record goes through it). */
  private readonly changes = new Fanout<Change>();
  private readonly applied = new Subject<AppliedBatch>();
  private readonly waiters = new Waiters<Outcome>();
  /**
   * Rejections of the last REJECTIONS_KEPT records, in a ring by index: a slot
   * holding another index means that record was applied. (A Map trimmed from
   * its oldest key costs O(deleted keys) per trim in V8 until it rehashes.)
   */
  private readonly rejections: (Outcome | undefined)[] = new Array(REJECTIONS_KEPT);
  private readonly context: RecordContext;
  private tailSubscription: Subscription | undefined;
  /** Batches from the tail not applied yet (the rest of a batch a slice ended in comes first). */
  private readonly backlog: (readonly LogRecord[])[] = [];
  private draining = false;
  private appliedTo = 0;
  private sinceSnapshot = 0;
  private snapshotting: Promise<void> | undefined;
  private failure: Error | undefined;

  /** Every row change, in log order. */
  readonly change$: Observable<Change> = this.changes.observable;
  /** One emission per applied batch of records. */
  readonly applied$: Observable<AppliedBatch> = this.applied.asObservable();

  constructor(private readonly options: StoreOptions) {
    this.projections = options.projections;
    this.gates = this.projections.filter((p) => p.admit !== undefined);
    this.context = new RecordContext(this.changes, this.observers);
    for (const p of this.projections) {
      const slot: Slot = { projection: p, position: 0 };
      this.slots.set(p.name, slot);
      for (const t of p.tables) {
        if (this.tables.has(t.name)) throw new Error(`table ${t.name} is declared by two projections`);
        this.tables.set(t.name, t);
      }
      for (const type of p.handles) {
        if (!options.codec.has(type))
          throw new Error(`projection ${p.name} handles unknown event type ${type}`);
        const list = this.byType.get(type) ?? [];
        list.push(slot);
        this.byType.set(type, list);
      }
      for (const table of p.observes ?? []) {
        if (p.tables.some((t) => t.name === table))
          throw new Error(`projection ${p.name} observes its own table ${table}`);
        const list = this.observers.get(table) ?? [];
        list.push(slot);
        this.observers.set(table, list);
      }
    }
  }

  get log(): EventLog {
    return this.options.log;
  }

  /** The index of the last record applied to every projection. */
  get appliedIndex(): number {
    return this.appliedTo;
  }

  table<R extends IndexedRow>(name: string): Table<R> {
    const t = this.tables.get(name);
    if (!t) throw new Error(`no table ${name}`);
    return t as unknown as Table<R>;
  }

  /** The highest index that changed any of `names`: the X-Nomad-Index of a list over them. */
  tableIndex(...names: string[]): number {
    let max = 0;
    for (const n of names) max = Math.max(max, this.table(n).index);
    return max;
  }

  /**
   * Loads the latest usable snapshot, catches up with the log, then follows
   * its tail. Resolves once every record present at start has been applied.
   */
  async start(options: { until?: number } = {}): Promise<void> {
    const until = Math.min(options.until ?? Number.POSITIVE_INFINITY, this.options.log.lastIndex());
    await this.loadSnapshot(until);
    const startedAt = performance.now();
    const from = this.appliedTo + 1;
    await this.advanceTo(until);
    if (until >= from) {
      this.options.logger.info(
        { from, to: this.appliedTo, ms: Math.round(performance.now() - startedAt) },
        "caught up with the log",
      );
    }
    // A store of the past stops at its index; only the live one follows the log.
    if (options.until !== undefined) return;
    this.tailSubscription = this.options.log.tail(this.appliedTo + 1).subscribe({
      next: (batch) => {
        this.backlog.push(batch);
        if (!this.draining) this.drain();
      },
      error: (err: Error) => this.fail(err),
    });
  }

  /**
   * Reads and applies the log up to `index` (inclusive). For stores that do
   * not follow the tail: past states, and event-stream catch-up.
   */
  async advanceTo(index: number): Promise<void> {
    if (this.tailSubscription) throw new Error("advanceTo is for stores that do not follow the log");
    const from = Math.min(...[...this.slots.values()].map((s) => s.position), this.appliedTo) + 1;
    if (index < from) return;
    // Ask for the next batch before applying this one, so the read of the
    // next batch overlaps the apply of this one. Batches stay small: both are
    // alive at every young-generation collection, which copies them.
    const batches = this.options.log
      .read(from, { maxBatch: 1024, untilIndex: index })
      [Symbol.asyncIterator]();
    for (let next = batches.next(); ; ) {
      const { done, value } = await next;
      if (done) break;
      next = batches.next();
      this.applyBatch(value);
      if (this.failure) throw this.failure;
    }
  }

  /**
   * Encodes and appends envelopes as one contiguous run; resolves once
   * durable. An entry given as bytes was encoded already (a plan a scheduler
   * thread computed) and goes as it is.
   */
  async append(envelopes: readonly (Envelope | Uint8Array)[]): Promise<AppendResult> {
    if (this.failure) throw this.failure;
    // `mapped`, not `envelopes.map`: the log's append, inlined into
    // writeEvents, sees one array map in every tier.
    const { codec } = this.options;
    return this.options.log.append(mapped(envelopes, (e) => (e instanceof Uint8Array ? e : codec.encode(e))));
  }

  /** Appends one envelope and waits for the outcome of applying it. */
  async write(envelope: Envelope): Promise<Outcome> {
    const { last } = await this.append([envelope]);
    return this.waitFor(last);
  }

  /** Resolves with the outcome of record `index` once it has been applied. */
  waitFor(index: number): Promise<Outcome> {
    if (this.failure) return Promise.reject(this.failure);
    if (index <= this.appliedTo) return Promise.resolve(this.outcome(index));
    return this.waiters.wait(index);
  }

  /** Resolves once everything appended so far has been applied. */
  async caughtUp(): Promise<void> {
    await this.waitFor(this.options.log.lastIndex());
  }

  /** A stable digest of every table, in key order: equal states give equal hashes. */
  hash(): string {
    const h = createHash("sha256");
    for (const name of [...this.tables.keys()].sort()) {
      const t = this.tables.get(name)!;
      h.update(`${name}\u0000${t.size}\u0000`);
      for (const row of t.all()) h.update(packPlain(row));
    }
    return h.digest("hex");
  }

  /** Writes a snapshot of the tables as of the applied index (to `file`, or the store's snapshot directory). */
  snapshot(file = this.options.snapshots): Promise<void> {
    if (!file) return Promise.resolve();
    if (this.snapshotting) return this.snapshotting;
    // Rows are immutable, so holding the current row references is a
    // consistent cut even while later records keep being applied.
    const data: SnapshotData = {
      index: this.appliedTo,
      projections: this.projections.map((p) => ({
        name: p.name,
        version: p.version,
        tables: p.tables.map((t) => ({ name: t.name, index: t.index, rows: [...t.all()] })),
      })),
    };
    this.sinceSnapshot = 0;
    this.snapshotting = file
      .save(data)
      .then(() => this.options.logger.info({ index: data.index }, "snapshot written"))
      .finally(() => {
        this.snapshotting = undefined;
      });
    return this.snapshotting;
  }

  /** Stops following the log; in-flight snapshot writes finish first. */
  async stop(): Promise<void> {
    this.tailSubscription?.unsubscribe();
    this.tailSubscription = undefined;
    this.backlog.length = 0;
    await this.snapshotting;
    this.waiters.rejectAll(new Error("store stopped"));
  }

  private outcome(index: number): Outcome {
    const rejected = this.rejections[index % REJECTIONS_KEPT];
    return rejected?.index === index ? rejected : { index, status: "applied" };
  }

  /** Applies the tail's backlog for up to APPLY_SLICE_MS, and the rest on a later turn. */
  private drain(): void {
    this.draining = true;
    // Apply keeps first claim on the loop's iteration (LoopTurn): its slice
    // is whole whatever the other pacers spent before it, and they leave it
    // room while it has a backlog. The others' work follows from what is
    // applied (wakes, answers, history), so cutting the slice would only
    // delay the writes that release it, and every writer waits for its
    // record's apply.
    loopTurn.claim();
    const slice = this.options.applySliceMs ?? APPLY_SLICE_MS;
    const deadline = performance.now() + slice;
    while (this.backlog.length > 0 && !this.failure) {
      const batch = this.backlog[0]!;
      const applied = this.applyBatch(batch, deadline);
      if (applied < batch.length) this.backlog[0] = batch.slice(applied);
      else this.backlog.shift();
      if (this.backlog.length > 0 && performance.now() >= deadline) {
        loopTurn.reserveNext(slice);
        loopTurn.deferred();
        setImmediate(this.drainTurn);
        return;
      }
    }
    this.draining = false;
  }

  private readonly drainTurn = (): void => {
    loopTurn.enterTurn();
    this.drain();
  };

  /**
   * Applies `batch` in order, stopping after the record that passes
   * `deadline`; returns how many of its records it went through. Then
   * releases the writers waiting on them and publishes what changed.
   */
  private applyBatch(batch: readonly LogRecord[], deadline = Number.POSITIVE_INFINITY): number {
    if (this.failure) return batch.length;
    const touched = new Set<string>();
    this.context.touched = touched;
    let n = 0;
    try {
      while (n < batch.length) {
        const record = batch[n++]!;
        if (record.index <= this.appliedTo) continue;
        if (record.index !== this.appliedTo + 1) {
          throw new Error(`log gap: expected index ${this.appliedTo + 1}, got ${record.index}`);
        }
        this.applyRecord(record);
        this.appliedTo = record.index;
        if (deadline !== Number.POSITIVE_INFINITY && performance.now() >= deadline) break;
      }
    } catch (err) {
      this.fail(err as Error);
      return batch.length;
    }
    const records = n === batch.length ? batch : batch.slice(0, n);
    this.sinceSnapshot += n;
    this.waiters.release(this.appliedTo, (i) => this.outcome(i));
    if (this.applied.observed) this.applied.next({ index: this.appliedTo, tables: touched, records });
    const every = this.options.snapshotEvery ?? 0;
    if (every > 0 && this.sinceSnapshot >= every) {
      this.snapshot().catch((err: Error) => this.options.logger.error({ err }, "snapshot failed"));
    }
    return n;
  }

  private applyRecord(record: LogRecord): void {
    const envelope = this.options.codec.decode(record.bytes);
    const refusal = this.gates.length === 0 ? undefined : this.admit(envelope, record.index);
    const slots = refusal ? [] : this.byType.get(envelope.type);
    if (!slots) return;
    const ctx = this.context;
    ctx.reset(record.index, envelope);
    if (refusal) ctx.reject(refusal.code, refusal.reason);
    for (const slot of slots) {
      if (slot.position >= record.index) continue;
      slot.projection.evolve(ctx, envelope);
      slot.position = record.index;
    }
    for (const slot of ctx.observed) slot.position = record.index;
    if (ctx.rejection) this.rejections[record.index % REJECTIONS_KEPT] = ctx.rejection;
  }

  /** The first refusal of a projection's `admit`: the record is then applied by none. */
  private admit(envelope: Envelope, index: number): Refusal | undefined {
    for (const gate of this.gates) {
      const refusal = gate.admit!(envelope, index);
      if (refusal) return refusal;
    }
    return undefined;
  }

  private fail(err: Error): void {
    // A record that cannot be applied would make this server's state diverge
    // from every other's; stop applying and surface it instead of skipping.
    this.failure = err;
    this.options.logger.fatal({ err, index: this.appliedTo + 1 }, "cannot apply the log");
    this.waiters.rejectAll(err);
    this.applied.error(err);
    this.changes.error(err);
  }

  private async loadSnapshot(until: number): Promise<void> {
    const file = this.options.snapshots;
    if (!file) return;
    // A snapshot ahead of the log (a log restored from an older copy) cannot
    // be trusted: it may hold records the log no longer has.
    const data = await file.load(until);
    if (!data) return;
    const saved = new Map(data.projections.map((p) => [p.name, p]));
    const stale = new Set(
      this.projections.filter((p) => saved.get(p.name)?.version !== p.version).map((p) => p.name),
    );
    for (const name of this.options.rebuild?.(data.index) ?? []) stale.add(name);
    // A projection rebuilt from the log must see the tables it reads as they
    // were at each record, and a projection that read a changed one may hold
    // different rows: both ends of every `reads` link are rebuilt together.
    const dependsOn = (a: Projection, b: Projection) =>
      a.reads?.includes(b.name) || b.tables.some((t) => a.observes?.has(t.name));
    const linked = (a: Projection, b: Projection) => dependsOn(a, b) || dependsOn(b, a);
    for (let grew = true; grew; ) {
      grew = false;
      for (const p of this.projections) {
        if (stale.has(p.name)) continue;
        if (this.projections.some((q) => stale.has(q.name) && linked(p, q))) {
          stale.add(p.name);
          grew = true;
        }
      }
    }
    for (const p of this.projections) {
      if (stale.has(p.name)) continue;
      const part = saved.get(p.name)!;
      const rowsByTable = new Map(part.tables.map((t) => [t.name, t]));
      for (const t of p.tables) {
        const saved = rowsByTable.get(t.name);
        t.restore((saved?.rows ?? []) as IndexedRow[], saved?.index ?? 0);
      }
      this.slots.get(p.name)!.position = data.index;
    }
    this.appliedTo = stale.size > 0 ? 0 : data.index;
    this.options.logger.info(
      { index: data.index, rebuilt: [...stale] },
      stale.size > 0 ? "snapshot loaded; rebuilding changed projections from the log" : "snapshot loaded",
    );
  }
}

interface Slot {
  readonly projection: Projection;
  position: number;
}

/** One per store, reset for each record: applying allocates nothing of its own. */
class RecordContext implements ApplyContext {
  index = 0;
  event = "";
  at = 0;
  rejection: Outcome | undefined;
  touched = new Set<string>();
  /** Observer slots that saw a change of this record. */
  readonly observed = new Set<Slot>();
  private envelope: Envelope | undefined;
  private changed = false;

  constructor(
    private readonly changes: Fanout<Change>,
    private readonly observers: ReadonlyMap<string, readonly Slot[]>,
  ) {}

  reset(index: number, envelope: Envelope): void {
    this.index = index;
    this.envelope = envelope;
    this.event = envelope.type;
    this.at = envelope.at;
    // V8's Set#clear allocates a fresh table even when the set is empty.
    if (this.observed.size > 0) this.observed.clear();
    this.rejection = undefined;
    this.changed = false;
  }

  get rejected(): boolean {
    return this.rejection !== undefined;
  }

  put<R extends IndexedRow>(table: Table<R>, row: NoInfer<R>): R | undefined {
    this.guard();
    const before = table.put(row, this.index);
    this.note(table.name, table.spec.key(row), before, row);
    return before;
  }

  delete<R extends IndexedRow>(table: Table<R>, key: string): R | undefined {
    this.guard();
    const before = table.delete(key, this.index);
    if (before) this.note(table.name, key, before, undefined);
    return before;
  }

  touch(table: AnyTable): void {
    table.touch(this.index);
    this.touched.add(table.name);
  }

  reject(code: number, reason: string): void {
    if (this.changed)
      throw new Error(`record ${this.index}: reject() after a change; validate before mutating`);
    this.rejection ??= { index: this.index, status: "rejected", code, reason };
  }

  private guard(): void {
    if (this.rejection) throw new Error(`record ${this.index}: change after reject()`);
    this.changed = true;
  }

  private note(table: string, key: string, before: unknown, after: unknown): void {
    this.touched.add(table);
    const observers = this.observers.get(table);
    if (!observers && !this.changes.observed) return;
    const change: Change = {
      table,
      key,
      before,
      after,
      index: this.index,
      event: this.event,
      at: this.at,
      envelope: this.envelope!,
    };
    for (const slot of observers ?? []) {
      if (slot.position >= this.index) continue;
      this.observed.add(slot);
      slot.projection.observe!(this, change, this.envelope!);
    }
    if (this.changes.observed) this.changes.next(change);
  }
}
