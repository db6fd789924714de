import type { KeyObject } from "node:crypto";
import type { Worker } from "node:worker_threads";
import type { Logger } from "pino";
import type { LogRecord } from "../../../log/event-log.ts";
import type { Store } from "../../../store/store.ts";
import type {
  FromThread,
  ReplicaStats,
  ScheduleItem,
  ScheduleOutcomeMessage,
  ScheduleRequest,
  StartupFigures,
  ThreadData,
  ToThread,
} from "./messages.ts";
import { type PackedRecords, packRecords } from "./record-batch.ts";
import { SCHEDULER_TABLES } from "./replica-projections.ts";
import { startTypeScriptWorker } from "./thread-loader.ts";

export interface SchedulerThreadsOptions {
  /** How many threads (config `scheduler_workers`: cores − 1, at least 1). */
  readonly workers: number;
  /** The main store: its log, read to catch a replica up, and its applied index. */
  readonly store: Pick<Store, "log" | "appliedIndex">;
  /** The main store's snapshot directory: a replica starts from its newest snapshot instead of the first record. */
  readonly snapshotDir?: string;
  readonly logger: Logger;
  /** The threads' own log level (they log to stderr). */
  readonly logLevel?: string;
  /** The tables replicas keep (the scheduler's, by default). */
  readonly tables?: readonly string[];
  /** RECORDS_HOLD_MS and RECORDS_HOLD_BYTES by default (tests change them). */
  readonly recordsHoldMs?: number;
  readonly recordsHoldBytes?: number;
  /**
   * The threads' nice value (config `scheduler_nice`; Linux, where it is
   * per thread), 0 by default: level with the main thread. Above 0, the
   * main thread, which reads every heartbeat and applies every plan, gets a
   * core first when more threads are runnable than there are cores, and
   * plans are computed later (docs/architecture.md, "Long turns").
   */
  readonly nice?: number;
}

/** What forwarding has cost the main thread so far. */
export interface ForwardingFigures {
  /** Records sent to replicas (each thread counted), live and while catching up. */
  readonly records: number;
  readonly bytes: number;
  /** Messages posted with records. */
  readonly messages: number;
  /** Main-thread time spent in applied() and in packing and posting records and requests (ms). */
  readonly ms: number;
  /** Schedule requests sent, and the messages that carried them (with records or alone). */
  readonly scheduleRequests: number;
  readonly scheduleMessages: number;
}

/** A replica that keeps failing before it is ready is restarted after 1 s, 2 s, 4 s… up to a minute. */
const RESTART_BASE_MS = 1_000;
const RESTART_MAX_MS = 60_000;

/** Records per message while a replica catches up: the main thread reads and posts one run per request. */
const CATCH_UP_BATCH = 4096;

/**
 * How long applied records with no request behind them may wait for others
 * before they are posted, and how many bytes of them are posted at once
 * (at the end of the turn's microtasks). A registration storm applies one
 * small record per write, each in its own turn, and a post per record woke
 * the replica's thread each time: 4% of the main thread in the load
 * benchmark's storm. Requests never wait: one goes out at the end of its
 * turn's microtasks with every record queued before it, so a replica is
 * never asked about an index it has not been sent.
 */
export const RECORDS_HOLD_MS = 5;
export const RECORDS_HOLD_BYTES = 256 * 1024;

interface Pending {
  readonly resolve: (value: never) => void;
  readonly reject: (err: Error) => void;
}

/**
 * Scheduler workers on their own threads, each with a replica of the
 * scheduler's tables that follows the main store record by record. The main
 * thread's part: forward what its store applied (bytes, as applied), hand
 * out evaluations, and take back plans computed at a known index. It never
 * decodes, clones or encodes per allocation.
 *
 * Consistency: the main store applies a record before forwarding it, and a
 * replica applies records in the same order with the same projections, so
 * at any index a replica's tables are the main store's at that index. A
 * request names the lowest index it may be computed at; the outcome says
 * which index it was.
 */
export class SchedulerThreads {
  private readonly threads: Thread[] = [];
  private nextID = 1;
  private closed = false;
  /** start() resolved: from then on a lost thread is replaced. */
  private started = false;
  private flushing = false;
  /** A flush of held records, armed when records alone are queued. */
  private holdTimer: ReturnType<typeof setTimeout> | undefined;
  /** Bytes of records queued since the last flush (counted once, whatever the threads). */
  private heldBytes = 0;
  private readonly figures = {
    records: 0,
    bytes: 0,
    messages: 0,
    ms: 0,
    scheduleRequests: 0,
    scheduleMessages: 0,
  };

  /** Call applied() for every batch the store applies from now on, start() included. */
  constructor(private readonly options: SchedulerThreadsOptions) {}

  /** Starts the threads; resolves once each replica has caught up with the store's index at its start. */
  async start(): Promise<this> {
    const count = Math.max(1, Math.floor(this.options.workers));
    for (let i = 0; i < count; i++) this.threads.push(this.spawn(i));
    try {
      await Promise.all(this.threads.map((t) => t.ready));
    } catch (err) {
      await this.close();
      throw err;
    }
    this.started = true;
    return this;
  }

  /** Resolves once every thread (a replacement of a lost one included) has a replica caught up. */
  async whenReady(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.ready));
  }

  get size(): number {
    return this.threads.length;
  }

  /** Some thread has a replica caught up: schedule() has somewhere to go. */
  get canSchedule(): boolean {
    return !this.closed && this.pick() !== undefined;
  }

  /**
   * Forwards a batch the main store just applied (its records, in order,
   * right after the apply): call it for every applied batch. The copy and
   * post happen once for all batches queued until a request, a hash or
   * stats question, RECORDS_HOLD_MS or RECORDS_HOLD_BYTES sends them.
   */
  applied(records: readonly LogRecord[]): void {
    if (this.closed || records.length === 0) return;
    const t0 = performance.now();
    const last = records[records.length - 1]!.index;
    for (const t of this.threads) {
      if (t.state !== "live" || last < t.next) continue;
      const from = records[0]!.index;
      if (from > t.next) {
        this.lose(t, new Error(`forwarding gap: thread ${t.name} needs ${t.next}, got ${from}`));
        continue;
      }
      t.outbox.push(from === t.next ? records : records.slice(t.next - from));
      t.next = last + 1;
    }
    for (const r of records) this.heldBytes += r.bytes.length;
    if (this.heldBytes >= (this.options.recordsHoldBytes ?? RECORDS_HOLD_BYTES)) this.flushSoon();
    else this.holdRecords();
    this.figures.ms += performance.now() - t0;
  }

  /**
   * Computes one evaluation on the least busy thread; fails when no thread
   * is ready (compute in process then). Requests go out with the turn's
   * records at the end of its microtasks, all of a thread's in one message:
   * a message wakes the thread, and each wake-up was most of a post's cost
   * on the main thread.
   */
  schedule(request: ScheduleRequest): Promise<ScheduleOutcomeMessage> {
    const t = this.pick();
    if (!t)
      return Promise.reject(
        new Error(this.closed ? "scheduler threads closed" : "no scheduler thread is ready"),
      );
    t.inFlight++;
    const id = this.nextID++;
    return new Promise<ScheduleOutcomeMessage>((resolve, reject) => {
      t.pending.set(id, { resolve: resolve as (value: never) => void, reject });
      t.requests.push({ id, request });
      this.flushSoon();
    }).finally(() => {
      t.inFlight--;
    });
  }

  /**
   * Signs JWS signing inputs with `key` on the least busy thread (workload
   * identities, see identity-signer.ts); fails when no thread is ready.
   */
  sign(key: KeyObject, inputs: readonly string[]): Promise<readonly string[]> {
    const t = this.pick();
    if (!t) return Promise.reject(new Error("no scheduler thread is ready"));
    t.inFlight++;
    return this.ask<readonly string[]>(t, (id) => ({ kind: "sign", id, key, inputs })).finally(() => {
      t.inFlight--;
    });
  }

  /** Each replica's state hash (of its tables) once it has applied `minIndex`. */
  hashes(minIndex: number): Promise<{ index: number; hash: string }[]> {
    // Held records go first: the question waits for no timer.
    this.flush();
    return Promise.all(
      this.threads.map((t) =>
        this.ask<{ index: number; hash: string }>(t, (id) => ({ kind: "hash", id, minIndex })),
      ),
    );
  }

  /** Each replica's figures; `gc` collects first, for a heap figure that is what the replica holds. */
  stats(gc = false): Promise<ReplicaStats[]> {
    this.flush();
    return Promise.all(
      this.threads.map((t) => this.ask<ReplicaStats>(t, (id) => ({ kind: "stats", id, gc }))),
    );
  }

  get forwarding(): ForwardingFigures {
    return { ...this.figures };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    await Promise.all(this.threads.map((t) => this.retire(t, new Error("scheduler threads closed"))));
  }

  private spawn(index: number, failures = 0): Thread {
    const name = `scheduler-thread-${index}`;
    const data: ThreadData = {
      startIndex: this.options.store.appliedIndex,
      snapshotDir: this.options.snapshotDir,
      tables: this.options.tables ?? SCHEDULER_TABLES,
      logLevel: this.options.logLevel ?? "warn",
      name,
      nice: this.options.nice ?? 0,
    };
    const worker = startTypeScriptWorker(new URL("./replica-thread.ts", import.meta.url), { thread: data });
    let ready!: (figures: StartupFigures) => void;
    let failed!: (err: Error) => void;
    const t: Thread = {
      index,
      name,
      worker,
      state: "starting",
      next: 0,
      iter: undefined,
      reading: Promise.resolve(),
      outbox: [],
      requests: [],
      pending: new Map(),
      inFlight: 0,
      ready: new Promise<StartupFigures>((resolve, reject) => {
        ready = resolve;
        failed = reject;
      }),
      startup: undefined,
      failures,
    };
    t.ready.catch(() => undefined);
    worker.on("message", (m: FromThread) => this.received(t, m, ready));
    worker.on("error", (err) => {
      failed(err);
      this.lose(t, err);
    });
    worker.on("exit", (code) => {
      const err = new Error(`${name} exited (code ${code})`);
      failed(err);
      this.lose(t, err);
    });
    return t;
  }

  private received(t: Thread, m: FromThread, ready: (figures: StartupFigures) => void): void {
    switch (m.kind) {
      case "follow":
        t.next = m.from;
        t.state = "catching-up";
        return;
      case "more":
        t.reading = t.reading.then(() => this.sendMore(t)).catch((err: Error) => this.lose(t, err));
        return;
      case "ready":
        t.startup = m.startup;
        this.options.logger.info({ thread: t.name, index: m.index, ...m.startup }, "scheduler replica ready");
        ready(m.startup);
        return;
      case "fatal":
        this.lose(t, new Error(`${t.name}: ${m.error}`));
        return;
      case "failed":
        this.settle(t, m.id)?.reject(new Error(m.error));
        return;
      case "answers":
        for (const a of m.answers) {
          if (a.error === undefined) this.settle(t, a.id)?.resolve(a.outcome as never);
          else this.settle(t, a.id)?.reject(new Error(a.error));
        }
        return;
      case "hash":
        this.settle(t, m.id)?.resolve({ index: m.index, hash: m.hash } as never);
        return;
      case "stats":
        this.settle(t, m.id)?.resolve(m.stats as never);
        return;
      case "signed":
        this.settle(t, m.id)?.resolve(m.signatures as never);
        return;
    }
  }

  /**
   * One run of records for a replica catching up, read from the log. Once it
   * has everything the store applied, it goes live in the same synchronous
   * step as that check: every later record reaches it through applied().
   */
  private async sendMore(t: Thread): Promise<void> {
    const { log } = this.options.store;
    while (t.state === "catching-up") {
      if (!t.iter) {
        const applied = this.options.store.appliedIndex;
        if (t.next > applied) {
          t.state = "live";
          this.post(t, { kind: "live", from: t.next });
          return;
        }
        t.iter = log.read(t.next, { maxBatch: CATCH_UP_BATCH, untilIndex: applied })[Symbol.asyncIterator]();
      }
      const r = await t.iter.next();
      if (t.state !== "catching-up") return;
      if (r.done) {
        t.iter = undefined;
        continue;
      }
      const batch = r.value.filter((x) => x.index >= t.next);
      if (batch.length === 0) continue;
      const t0 = performance.now();
      this.postRecords(t, [batch]);
      this.figures.ms += performance.now() - t0;
      t.next = batch[batch.length - 1]!.index + 1;
      return;
    }
  }

  /** One flush at the end of this turn's microtasks, for everything queued until then. */
  private flushSoon(): void {
    if (this.flushing) return;
    this.flushing = true;
    queueMicrotask(() => this.flush());
  }

  /** A flush within RECORDS_HOLD_MS, for records alone: records applied meanwhile go in the same message. */
  private holdRecords(): void {
    if (this.holdTimer !== undefined || this.flushing) return;
    this.holdTimer = setTimeout(() => {
      this.holdTimer = undefined;
      this.flush();
    }, this.options.recordsHoldMs ?? RECORDS_HOLD_MS);
    // Held records matter to no one once the process is otherwise done.
    this.holdTimer.unref();
  }

  private flush(): void {
    this.flushing = false;
    if (this.holdTimer !== undefined) {
      clearTimeout(this.holdTimer);
      this.holdTimer = undefined;
    }
    this.heldBytes = 0;
    const t0 = performance.now();
    // Threads that follow the store are owed the same batches: packed once,
    // into memory they all read, instead of a copy and a transfer each (a
    // third of the posting's cost with three threads).
    let last: { batches: readonly (readonly LogRecord[])[]; packed: PackedRecords } | undefined;
    for (const t of this.threads) {
      if (t.outbox.length === 0 && t.requests.length === 0) continue;
      const batches = t.outbox.splice(0);
      const requests = t.requests.length > 0 ? t.requests.splice(0) : undefined;
      if (t.state === "dead") continue;
      if (requests) {
        this.figures.scheduleRequests += requests.length;
        this.figures.scheduleMessages++;
      }
      if (batches.length > 0 && t.state === "live") {
        if (!last || !sameBatches(last.batches, batches))
          last = { batches, packed: packRecords(batches, true) };
        this.postPacked(t, last.packed, false, requests);
      } else if (requests) {
        this.post(t, { kind: "schedule", items: requests });
      }
    }
    this.figures.ms += performance.now() - t0;
  }

  private postRecords(t: Thread, batches: readonly (readonly LogRecord[])[]): void {
    this.postPacked(t, packRecords(batches), true);
  }

  /** `transfer`: the buffer is this thread's alone, and moves to it. `schedule`: requests to send along. */
  private postPacked(
    t: Thread,
    packed: PackedRecords,
    transfer: boolean,
    schedule?: readonly ScheduleItem[],
  ): void {
    this.figures.records += packed.count;
    this.figures.bytes += packed.buffer.byteLength;
    this.figures.messages++;
    const message = (
      schedule ? { kind: "records", ...packed, schedule } : { kind: "records", ...packed }
    ) satisfies ToThread;
    if (transfer) t.worker.postMessage(message, [packed.buffer as ArrayBuffer]);
    else t.worker.postMessage(message);
  }

  private post(t: Thread, message: ToThread): void {
    t.worker.postMessage(message);
  }

  private pick(): Thread | undefined {
    let best: Thread | undefined;
    for (const t of this.threads) {
      if (t.state === "dead" || t.startup === undefined) continue;
      if (!best || t.inFlight < best.inFlight) best = t;
    }
    return best;
  }

  private ask<T>(t: Thread, message: (id: number) => ToThread): Promise<T> {
    if (t.state === "dead") return Promise.reject(new Error(`${t.name} is not running`));
    const id = this.nextID++;
    return new Promise<T>((resolve, reject) => {
      t.pending.set(id, { resolve: resolve as (value: never) => void, reject });
      this.post(t, message(id));
    });
  }

  private settle(t: Thread, id: number): Pending | undefined {
    const p = t.pending.get(id);
    t.pending.delete(id);
    return p;
  }

  /**
   * A thread that failed: its requests fail (the broker brings their
   * evaluations back) and a fresh replica takes its place, at once if the
   * lost one had been working, after a growing pause if it never got ready
   * (a replica that cannot start would otherwise be restarted in a loop).
   * While none is ready, schedule() throws: the caller computes in process.
   */
  private lose(t: Thread, err: Error): void {
    if (t.state === "dead") return;
    if (!this.closed) this.options.logger.error({ err, thread: t.name }, "scheduler thread lost");
    void this.retire(t, err);
    if (this.closed || !this.started) return;
    const failures = t.startup === undefined ? t.failures + 1 : 0;
    const delay = failures === 0 ? 0 : Math.min(RESTART_MAX_MS, RESTART_BASE_MS * 2 ** (failures - 1));
    const replace = () => {
      if (this.closed || this.threads[t.index] !== t) return;
      const fresh = this.spawn(t.index, failures);
      this.threads[t.index] = fresh;
    };
    if (delay === 0) replace();
    else setTimeout(replace, delay).unref();
  }

  private async retire(t: Thread, err: Error): Promise<void> {
    t.state = "dead";
    t.outbox.length = 0;
    t.requests.length = 0;
    for (const p of t.pending.values()) p.reject(err);
    t.pending.clear();
    void t.iter?.return?.();
    await t.worker.terminate();
  }
}

interface Thread {
  readonly index: number;
  readonly name: string;
  readonly worker: Worker;
  state: "starting" | "catching-up" | "live" | "dead";
  /** The next index this thread is to be sent. */
  next: number;
  /** The log reader of a replica catching up. */
  iter: AsyncIterator<LogRecord[]> | undefined;
  /** Catch-up requests, one at a time. */
  reading: Promise<void>;
  outbox: (readonly LogRecord[])[];
  /** Schedule requests waiting for this turn's flush. */
  readonly requests: ScheduleItem[];
  readonly pending: Map<number, Pending>;
  inFlight: number;
  readonly ready: Promise<StartupFigures>;
  startup: StartupFigures | undefined;
  /** Replicas of this slot in a row that were lost before they got ready. */
  readonly failures: number;
}

/** The same batches, element by element (applied() hands every live thread the same arrays). */
function sameBatches(a: readonly (readonly LogRecord[])[], b: readonly (readonly LogRecord[])[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
