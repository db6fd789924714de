import {
  BACKWARDS,
  binaryEvent,
  END,
  EventStoreDBClient,
  type ResolvedEvent,
  START,
  type StreamingRead,
  StreamNotFoundError,
  type StreamSubscription,
  WrongExpectedVersionError,
} from "@eventstore/db-client";
import type { Logger } from "pino";
import { Observable, type Subscriber } from "rxjs";
import {
  type AppendResult,
  type EventLog,
  LogError,
  type LogRecord,
  type ReadOptions,
} from "../event-log.ts";
import { GroupCommit } from "../kafka/group-commit.ts";
import { esdbLogError, isLostAnswer } from "./esdb-errors.ts";
import { expectedRevisionAfter, indexToRevision, revisionToIndex } from "./esdb-revision.ts";
import { type EsdbLogAddress, parseEsdbUrl } from "./esdb-url.ts";

export interface EsdbLogOptions {
  /** Told when the stream moves under this server (another writer). */
  readonly logger?: Logger;
  /** Refuse to open a stream that does not exist yet (a log opened only to be read). */
  readonly mustExist?: boolean;
}

/** The type every record's event carries; the payload is the envelope's bytes, untouched. */
export const ESDB_EVENT_TYPE = "chronomad.record";
const DEFAULT_READ_BATCH = 1024;
// One readStream call per chunk, so a long read holds no server-side cursor
// for long and a slow consumer does not buffer the whole stream.
const READ_CHUNK = 4096;
/**
 * What one append may hold so that EventStoreDB's default MaxAppendSize
 * (1 MiB) takes it: the server counts each event's whole message (ID, type,
 * content type: about 100 bytes) besides its data, which group commit's own
 * accounting (24 bytes a record) does not, hence the margin. A single
 * caller's larger batch still goes whole (and may be refused, saying so).
 */
export const ESDB_APPEND_LIMITS = { maxBatchBytes: 640 * 1024, maxBatchRecords: 2048 } as const;
/** Bytes EventStoreDB counts per event besides its data, rounded up. */
export const ESDB_EVENT_OVERHEAD = 128;
// An append whose answer was lost may have been written. Sent again with the
// same event IDs and expected revision, EventStoreDB answers success without
// writing twice (idempotent appends), so a lost answer costs a retry.
const APPEND_ATTEMPTS = 3;
const RETRY_DELAY_MS = 250;
// Servers sharing the stream take turns; past this many conflicts in a row
// for one append, the caller is told (an io LogError) rather than kept waiting.
const MAX_CONFLICTS = 20;

/**
 * Opens the log kept in one EventStoreDB stream:
 * `esdb://host:port[,host:port][?tls=false][&stream=NAME]` (see esdb-url.ts).
 */
export async function openEsdbLog(url: string, options: EsdbLogOptions = {}): Promise<EsdbLog> {
  const address = parseEsdbUrl(url);
  const client = EventStoreDBClient.connectionString(address.connectionString);
  try {
    const last = await streamEnd(client, address.stream);
    if (last === undefined && options.mustExist) {
      throw new LogError(
        `EventStoreDB log ${address.display}: stream ${address.stream} does not exist; there is nothing to read`,
        "config",
      );
    }
    return new EsdbLog(address, client, last ?? 0, options.logger);
  } catch (error) {
    await client.dispose().catch(() => undefined);
    const mapped = esdbLogError(error, address.display, address.stream, "open");
    if (mapped.code !== "io") throw mapped;
    throw Object.assign(new LogError(`cannot open EventStoreDB log: ${mapped.message}`, "io"), {
      cause: error,
    });
  }
}

/** The index of the stream's last event, 0 if it holds none, undefined if it does not exist. */
async function streamEnd(client: EventStoreDBClient, stream: string): Promise<number | undefined> {
  try {
    for await (const resolved of client.readStream(stream, {
      direction: BACKWARDS,
      fromRevision: END,
      maxCount: 1,
    })) {
      if (resolved.event) return revisionToIndex(resolved.event.revision);
    }
    return 0;
  } catch (error) {
    if (error instanceof StreamNotFoundError) return undefined;
    throw error;
  }
}

/**
 * The log as one EventStoreDB stream: event revision r holds the record at
 * index r + 1. Every append (a group of callers' batches, each contiguous)
 * is one appendToStream call expecting the stream to end where this server
 * last saw it end, so a record someone else appended is never silently
 * interleaved: EventStoreDB refuses the whole append and the callers get a
 * LogError (see esdbLogError). Reads are chunked readStream calls; a tail
 * is a catch-up subscription.
 */
export class EsdbLog implements EventLog {
  readonly url: string;
  private readonly commit: GroupCommit;
  private readonly tails = new Set<Subscriber<LogRecord[]>>();
  private readonly reads = new Set<StreamingRead<ResolvedEvent>>();
  private closing: Promise<void> | undefined;
  /** Where this server's next append must land after: the end found at open, then its own last append. */
  private written: number;
  /** The highest index known to exist, from appends, reads and tails. */
  private high: number;

  /** @internal use {@link openEsdbLog} */
  constructor(
    private readonly address: EsdbLogAddress,
    private readonly client: EventStoreDBClient,
    last: number,
    private readonly logger?: Logger,
  ) {
    this.url = address.display;
    this.written = last;
    this.high = last;
    this.commit = new GroupCommit((records) => this.send(records), ESDB_APPEND_LIMITS);
  }

  /** The stream holding the log. */
  get stream(): string {
    return this.address.stream;
  }

  append(records: readonly Uint8Array[]): Promise<AppendResult> {
    if (this.closing) return Promise.reject(new LogError(`${this.url} is closed`, "closed"));
    if (records.length === 0) return Promise.reject(new LogError("append of an empty batch", "range"));
    return this.commit.append(records.map((r) => Buffer.from(r.buffer, r.byteOffset, r.byteLength)));
  }

  async *read(fromIndex: number, options: ReadOptions = {}): AsyncIterable<LogRecord[]> {
    this.assertOpen();
    const maxBatch = Math.max(1, Math.floor(options.maxBatch ?? DEFAULT_READ_BATCH));
    let next = Math.max(1, Math.floor(fromIndex));
    // The end is fixed now, from the server, so a read over a busy log ends.
    const end = await this.refreshEnd();
    const until = Math.min(options.untilIndex ?? Number.POSITIVE_INFINITY, end);
    while (next <= until) {
      const count = Math.min(READ_CHUNK, until - next + 1);
      const stream = this.client.readStream(this.address.stream, {
        fromRevision: indexToRevision(next),
        maxCount: count,
      });
      this.reads.add(stream);
      const chunkEnd = next + count;
      let batch: LogRecord[] = [];
      let finished = false;
      try {
        for await (const resolved of stream) {
          batch.push(this.recordOf(resolved, next));
          next++;
          if (batch.length === maxBatch) {
            yield batch;
            batch = [];
          }
        }
        finished = true;
      } catch (error) {
        if (this.closing) throw new LogError(`${this.url} was closed during a read`, "closed");
        throw esdbLogError(error, this.url, this.address.stream, "read");
      } finally {
        this.reads.delete(stream);
        // Stops the server's cursor when the caller leaves the loop early.
        if (!finished) await stream.cancel().catch(() => undefined);
      }
      if (batch.length > 0) yield batch;
      if (this.closing) throw new LogError(`${this.url} was closed during a read`, "closed");
      // A chunk that came back short: the stream ends before `until` (checked below).
      if (next < chunkEnd) break;
    }
    if (next <= until) {
      throw new LogError(
        `${this.url}: stream ${this.address.stream} ended at index ${next - 1}, before ${until} which it held moments ago`,
        "corrupt",
      );
    }
  }

  tail(fromIndex: number): Observable<LogRecord[]> {
    return new Observable<LogRecord[]>((subscriber) => {
      if (this.closing) {
        subscriber.error(new LogError(`${this.url} is closed`, "closed"));
        return;
      }
      let next = Math.max(1, Math.floor(fromIndex));
      // Whether the client starts a subscription at the revision it is given
      // or just after it, starting one before the first wanted and skipping
      // what is below `next` gives the same records.
      const subscription: StreamSubscription = this.client.subscribeToStream(this.address.stream, {
        fromRevision: next >= 2 ? indexToRevision(next - 1) : START,
      });
      let pending: LogRecord[] = [];
      let scheduled = false;
      // Events arrive one by one; those that arrive together go out as one batch.
      const flush = () => {
        scheduled = false;
        const out = pending;
        pending = [];
        for (let i = 0; i < out.length && !subscriber.closed; i += DEFAULT_READ_BATCH) {
          subscriber.next(out.slice(i, i + DEFAULT_READ_BATCH));
        }
      };
      subscription.on("data", (resolved: ResolvedEvent) => {
        if (subscriber.closed || !resolved.event) return;
        try {
          if (revisionToIndex(resolved.event.revision) < next) return;
          pending.push(this.recordOf(resolved, next));
          next++;
        } catch (error) {
          subscriber.error(error);
          return;
        }
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
      subscription.on("error", (error: Error) => {
        if (!subscriber.closed) subscriber.error(esdbLogError(error, this.url, this.address.stream, "tail"));
      });
      this.tails.add(subscriber);
      return () => {
        this.tails.delete(subscriber);
        void subscription.unsubscribe().catch(() => undefined);
      };
    });
  }

  lastIndex(): number {
    return this.high;
  }

  firstIndex(): number {
    return 1;
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    await this.commit.drain();
    for (const subscriber of [...this.tails]) subscriber.complete();
    await Promise.allSettled([...this.reads].map((read) => read.cancel()));
    await this.client.dispose().catch(() => undefined);
  }

  private async send(records: readonly Buffer[]): Promise<number> {
    const from = this.written;
    let after = from;
    // Event IDs are fixed here, once: a retry sends the very same events.
    const events = records.map((data) => binaryEvent({ type: ESDB_EVENT_TYPE, data }));
    let last: number;
    let lost = 0;
    let conflicts = 0;
    for (;;) {
      try {
        const result = await this.client.appendToStream(this.address.stream, events, {
          expectedRevision: expectedRevisionAfter(after),
        });
        last = revisionToIndex(result.nextExpectedRevision);
        break;
      } catch (error) {
        if (lost < APPEND_ATTEMPTS - 1 && isLostAnswer(error) && !this.closing) {
          lost++;
          await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS * lost));
          continue;
        }
        if (error instanceof WrongExpectedVersionError && conflicts < MAX_CONFLICTS && !this.closing) {
          // Another server appended (several servers share the stream under
          // an election, each writing what it accepts, as on Kafka). If an
          // earlier try whose answer was lost did land, it is found by its
          // event ID; otherwise nothing of this batch is in the stream, and
          // it goes again, whole, after the end as it is now.
          conflicts++;
          const landed = lost > 0 ? await this.find(events[0]!.id, from) : undefined;
          if (landed !== undefined) {
            last = landed + records.length - 1;
            break;
          }
          after = await this.refreshEnd().catch((e: unknown) => {
            throw esdbLogError(e, this.url, this.address.stream, "append");
          });
          continue;
        }
        const mapped = esdbLogError(error, this.url, this.address.stream, "append");
        if (mapped.code === "config") this.logger?.error({ err: mapped }, "EventStoreDB log append refused");
        throw mapped;
      }
    }
    if (last !== after + records.length) {
      throw new LogError(
        `${this.url}: an append after index ${after} of ${records.length} records ended at index ${last}`,
        "corrupt",
      );
    }
    this.written = last;
    this.observe(last);
    return after + 1;
  }

  /** The index of the event `id` after `after`, if it is there: one chunk at a time, to the end. */
  private async find(id: string, after: number): Promise<number | undefined> {
    try {
      for await (const resolved of this.client.readStream(this.address.stream, {
        fromRevision: after === 0 ? START : indexToRevision(after + 1),
      })) {
        if (resolved.event?.id === id) return revisionToIndex(resolved.event.revision);
      }
    } catch (error) {
      throw esdbLogError(error, this.url, this.address.stream, "append");
    }
    return undefined;
  }

  /** The record an event holds, checking it is the one expected at `index`. */
  private recordOf(resolved: ResolvedEvent, index: number): LogRecord {
    const event = resolved.event;
    const at = event ? revisionToIndex(event.revision) : undefined;
    if (!event || at !== index) {
      throw new LogError(
        `${this.url}: stream ${this.address.stream} skips from index ${index - 1} to ${at ?? "nothing"}: ` +
          "was it truncated ($maxCount, $maxAge, $tb) or scavenged?",
        "corrupt",
      );
    }
    if (event.isJson || event.type !== ESDB_EVENT_TYPE) {
      throw new LogError(
        `${this.url}: event ${event.revision} of stream ${this.address.stream} is a ${event.type} ` +
          `event, not a ${ESDB_EVENT_TYPE}: something else writes to this stream`,
        "corrupt",
      );
    }
    this.observe(index);
    return { index, bytes: event.data };
  }

  private async refreshEnd(): Promise<number> {
    try {
      this.observe((await streamEnd(this.client, this.address.stream)) ?? 0);
    } catch (error) {
      throw esdbLogError(error, this.url, this.address.stream, "read");
    }
    return this.high;
  }

  // The end only moves forward; answers can arrive out of order.
  private observe(index: number): void {
    if (index > this.high) this.high = index;
  }

  private assertOpen(): void {
    if (this.closing) throw new LogError(`${this.url} is closed`, "closed");
  }
}
