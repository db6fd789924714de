import { type Clock, systemClock, type Timer } from "../util/clock.ts";

/** A scheduled callback of a TimerQueue; `cancel` it through the queue. */
export interface QueuedTimer {
  readonly due: number;
  /** Set once it fired or was cancelled. */
  done: boolean;
}

interface Entry extends QueuedTimer {
  readonly seq: number;
  readonly fn: () => void;
}

/**
 * Every timer of every simulated node on one clock timer: a binary heap
 * ordered by due time (ties in scheduling order), and a single clock
 * timeout armed for the earliest entry. Thousands of nodes with a heartbeat,
 * a retry and a task timer each cost heap entries, not runtime timers.
 * Cancelled entries stay in the heap until they surface (lazy deletion).
 */
export class TimerQueue {
  private readonly heap: Entry[] = [];
  private seq = 0;
  private armed: Timer | undefined;
  private armedFor = Number.POSITIVE_INFINITY;
  private stopped = false;

  constructor(
    readonly clock: Clock = systemClock,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  now(): number {
    return this.clock.now();
  }

  after(ms: number, fn: () => void): QueuedTimer {
    return this.at(this.clock.now() + Math.max(0, ms), fn);
  }

  at(due: number, fn: () => void): QueuedTimer {
    const entry: Entry = { due, seq: this.seq++, fn, done: false };
    if (this.stopped) {
      entry.done = true;
      return entry;
    }
    this.push(entry);
    if (due < this.armedFor) this.arm();
    return entry;
  }

  cancel(timer: QueuedTimer | undefined): void {
    if (timer) timer.done = true;
  }

  /** Entries in the heap, cancelled ones included until they surface. */
  get size(): number {
    return this.heap.length;
  }

  /** Drops everything; later `at` calls schedule nothing. */
  stop(): void {
    this.stopped = true;
    if (this.armed) this.clock.clearTimeout(this.armed);
    this.armed = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    for (const e of this.heap) e.done = true;
    this.heap.length = 0;
  }

  private arm(): void {
    while (this.heap.length > 0 && this.heap[0]!.done) this.pop();
    const top = this.heap[0];
    if (this.armed) this.clock.clearTimeout(this.armed);
    this.armed = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    if (!top || this.stopped) return;
    this.armedFor = top.due;
    this.armed = this.clock.setTimeout(() => this.fire(), Math.max(0, top.due - this.clock.now()));
  }

  private fire(): void {
    this.armed = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    while (this.heap.length > 0 && !this.stopped) {
      const top = this.heap[0]!;
      if (top.done) {
        this.pop();
        continue;
      }
      if (top.due > now) break;
      this.pop();
      top.done = true;
      try {
        top.fn();
      } catch (err) {
        this.onError(err);
      }
    }
    this.arm();
  }

  private push(e: Entry): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(e, h[parent]!)) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = e;
  }

  private pop(): Entry | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length === 0 || !last) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const r = l + 1;
      const child = r < h.length && before(h[r]!, h[l]!) ? r : l;
      if (!before(h[child]!, last)) break;
      h[i] = h[child]!;
      i = child;
    }
    h[i] = last;
    return top;
  }
}

const before = (a: Entry, b: Entry) => a.due < b.due || (a.due === b.due && a.seq < b.seq);
