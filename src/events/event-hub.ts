import type { Logger } from "pino";
import { Observable, Subject, type Subscription } from "rxjs";
import type { Projections } from "../../projections/index.ts";
import type { EnvelopeCodec } from "../codec/envelope-codec.ts";
import type { SnapshotFile } from "../store/snapshot-file.ts";
import { Store } from "../store/store.ts";
import { type Frame, FrameBuilder, type RecordFrame } from "./frames.ts";

export interface EventHubOptions {
  readonly store: Store;
  readonly codec: EnvelopeCodec;
  readonly createProjections: () => Projections;
  readonly snapshots?: SnapshotFile;
  readonly logger: Logger;
  /**
   * Recent events kept in memory (Nomad's event_buffer_size), counted by
   * change (the complete feed's events), not frame: one record can carry thousands (a page of evaluation
   * deletes, a window of client updates). The newest frame is always kept.
   * Older cursors are served by replaying the log.
   */
  readonly bufferEvents?: number;
}

/** Records replayed for a subscriber before it is asked whether it has read what they produced. */
const REPLAY_SLICE = 1024;

/** Evicted slots of the buffer's array left before it is compacted (when they are also half of it). */
const COMPACT_AFTER = 1024;

export class CursorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CursorError";
  }
}

/**
 * Turns the store's table changes into event-stream frames and serves them
 * from any index the log holds. Recent frames come from a bounded in-memory
 * buffer; a cursor older than the buffer is served by a temporary store that
 * replays the log from the nearest snapshot, capturing its frames, until it
 * reaches the buffer. Nothing is skipped and nothing repeats.
 */
export class EventHub {
  private readonly live = new Subject<RecordFrame>();
  /**
   * The buffer: `frames` from `head` on (the slots before it were evicted).
   * A queue compacted now and then rather than an array sliced on every
   * eviction, which copied the whole buffer for every frame once it was full.
   */
  private frames: (RecordFrame | undefined)[] = [];
  private head = 0;
  /** Changes in the buffer's frames (a progress frame counts as one). */
  private buffered = 0;
  private readonly builder = new FrameBuilder((f) => this.publish(f));
  private readonly limit: number;
  /** Every frame with an index >= coveredFrom is in the buffer (or still to come). */
  private coveredFrom: number;
  private subscriptions: Subscription[] = [];

  constructor(private readonly options: EventHubOptions) {
    this.limit = options.bufferEvents ?? 10_000;
    this.coveredFrom = options.store.appliedIndex + 1;
    this.subscriptions.push(
      options.store.change$.subscribe((c) => this.builder.add(c)),
      options.store.applied$.subscribe((b) => this.builder.flush(b.index)),
    );
  }

  stop(): void {
    for (const s of this.subscriptions) s.unsubscribe();
    this.subscriptions = [];
    this.live.complete();
  }

  /**
   * Frames with Index > `after`, in order: first the past, then live.
   * `ready` paces the replay of the past: it is awaited between slices, so a
   * subscriber far behind gets the history as fast as it reads it rather
   * than all at once into its socket's buffer.
   */
  framesAfter(after: number, ready: () => Promise<void> = async () => {}): Observable<Frame> {
    return new Observable<Frame>((subscriber) => {
      let last = after;
      let stopped = false;
      const deliver = (f: Frame) => {
        if (f.Index <= last || stopped) return;
        last = f.Index;
        subscriber.next(f);
      };
      // Live frames are held back until the past has been delivered.
      const pending: RecordFrame[] = [];
      let caughtUp = false;
      const liveSub = this.live.subscribe({
        next: (f) => (caughtUp ? deliver(f) : pending.push(f)),
        complete: () => subscriber.complete(),
      });
      const catchUp = async () => {
        if (last + 1 < this.coveredFrom) last = await this.replayPast(last, deliver, () => stopped, ready);
        const frames = this.frames;
        for (let i = this.head; i < frames.length; i++) {
          const f = frames[i]!;
          if (f.Index <= last) continue;
          deliver(f);
          // What this subscriber had built is not kept for the buffer's lifetime.
          f.release();
        }
        for (const f of pending) {
          deliver(f);
          f.release();
        }
        pending.length = 0;
        caughtUp = true;
      };
      catchUp().catch((err: Error) => subscriber.error(err));
      return () => {
        stopped = true;
        liveSub.unsubscribe();
      };
    });
  }

  private publish(frame: RecordFrame): void {
    this.frames.push(frame);
    // A progress frame counts as one: the buffer is bounded in frames too.
    this.buffered += Math.max(1, frame.size);
    const frames = this.frames;
    let head = this.head;
    if (this.buffered > this.limit) {
      let evicted = -1;
      while (this.buffered > this.limit && head < frames.length - 1) {
        const oldest = frames[head]!;
        this.buffered -= Math.max(1, oldest.size);
        evicted = oldest.Index;
        frames[head++] = undefined;
      }
      if (evicted >= 0) this.coveredFrom = evicted + 1;
      if (head >= COMPACT_AFTER && head * 2 >= frames.length) {
        this.frames = frames.slice(head);
        head = 0;
      }
      this.head = head;
    }
    if (this.live.observed) {
      this.live.next(frame);
      // Its subscribers have written it: the buffer keeps the changes only.
      frame.release();
    }
  }

  /**
   * Replays the log from the state at `after` up to the buffer's coverage,
   * delivering the frames it produces. Returns the last index replayed.
   */
  private async replayPast(
    after: number,
    deliver: (f: Frame) => void,
    stopped: () => boolean,
    ready: () => Promise<void>,
  ): Promise<number> {
    const { log } = this.options.store;
    if (after + 1 < log.firstIndex()) {
      throw new CursorError(
        `index ${after} is older than the log holds (first index ${log.firstIndex()}); resubscribe from index ${log.firstIndex() - 1} or later`,
      );
    }
    const projections = this.options.createProjections();
    const past = new Store({
      log,
      codec: this.options.codec,
      projections: projections.all,
      logger: this.options.logger,
      snapshots: this.options.snapshots,
    });
    await past.start({ until: after });
    const builder = new FrameBuilder(deliver);
    const subs = [
      past.change$.subscribe((c) => builder.add(c)),
      past.applied$.subscribe((b) => builder.flush(b.index)),
    ];
    try {
      // The buffer keeps moving while the replay runs; go until they meet.
      while (past.appliedIndex + 1 < this.coveredFrom && !stopped()) {
        await past.advanceTo(Math.min(this.coveredFrom - 1, past.appliedIndex + REPLAY_SLICE));
        await ready();
      }
    } finally {
      for (const s of subs) s.unsubscribe();
      await past.stop();
    }
    return past.appliedIndex;
  }
}
