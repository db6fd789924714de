/**
 * How many callbacks a TurnPacer runs per turn of the event loop unless told.
 * Each one here releases a waiting request (a woken blocking read, a client
 * update's caller) whose answer then runs as microtasks in the same turn:
 * the read, its JSON, fastify's reply cycle and the socket write, about
 * 150 µs on average during a placement burst (more for an Alloc.GetAllocs
 * that signs identities). 32 keep a turn's share near one apply slice.
 */
export const CALLS_PER_TURN = 32;

/**
 * Runs callbacks at most `perTurn` per turn of the event loop, in order, the
 * rest on later turns (`setImmediate`), so the loop's I/O (heartbeats,
 * new requests) is served in between.
 *
 * Why per call and not per millisecond: a callback here only resolves a
 * promise; the work it releases runs afterwards, as microtasks of the same
 * turn, where no clock read of the pacer can see it. A placement burst
 * applies one batch and wakes a thousand of the nodes' long polls at once;
 * released together, their answers held the loop for up to 230 ms after
 * the 5 ms apply slice that woke them.
 *
 * Calls made while the turn's quota is not used up run at once, so a quiet
 * server answers as before, with no added turn.
 */
export class TurnPacer {
  private queue: (() => void)[] = [];
  private head = 0;
  /** Callbacks run since the last turn began (the last `setImmediate` of this pacer). */
  private used = 0;
  private scheduled = false;

  constructor(private readonly perTurn = CALLS_PER_TURN) {
    if (!(perTurn >= 1)) throw new Error(`perTurn must be at least 1, got ${perTurn}`);
  }

  /** Callbacks waiting for a later turn. */
  get waiting(): number {
    return this.queue.length - this.head;
  }

  run(callback: () => void): void {
    if (this.waiting === 0 && this.used < this.perTurn) {
      this.used++;
      this.schedule();
      callback();
      return;
    }
    this.queue.push(callback);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.turn);
  }

  private readonly turn = (): void => {
    this.scheduled = false;
    this.used = 0;
    try {
      while (this.waiting > 0 && this.used < this.perTurn) {
        const callback = this.queue[this.head]!;
        this.queue[this.head++] = noop;
        this.used++;
        callback();
      }
    } finally {
      if (this.waiting === 0) {
        this.queue = [];
        this.head = 0;
      }
      // A turn that ran something opens the next one (its quota counts until then).
      if (this.used > 0) this.schedule();
    }
  };
}

function noop(): void {}
