/** A timer handle of a Clock; opaque to callers. */
export interface Timer {
  readonly id: number;
}

/**
 * Time as services see it. The system clock in production; a virtual clock
 * in tests, so heartbeat expiry and delays run in virtual time.
 */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): Timer;
  clearTimeout(timer: Timer): void;
}

export const systemClock: Clock = (() => {
  const live = new Map<number, NodeJS.Timeout>();
  let next = 1;
  return {
    now: () => Date.now(),
    setTimeout(fn, ms) {
      const id = next++;
      const handle = setTimeout(() => {
        live.delete(id);
        fn();
      }, ms);
      // Timers of services never keep the process alive on their own.
      handle.unref();
      live.set(id, handle);
      return { id };
    },
    clearTimeout(timer) {
      const handle = live.get(timer.id);
      if (handle) clearTimeout(handle);
      live.delete(timer.id);
    },
  };
})();

/**
 * A clock that moves only when told to. `advance` fires due timers in time
 * order, each seeing `now()` equal to its due time.
 */
export class VirtualClock implements Clock {
  private current: number;
  private readonly timers = new Map<number, { due: number; fn: () => void }>();
  private nextId = 1;

  constructor(start = 1_763_800_000_000) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const id = this.nextId++;
    this.timers.set(id, { due: this.current + Math.max(0, ms), fn });
    return { id };
  }

  clearTimeout(timer: Timer): void {
    this.timers.delete(timer.id);
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  advance(ms: number): void {
    const end = this.current + ms;
    for (;;) {
      let nextId = -1;
      let nextDue = Number.POSITIVE_INFINITY;
      for (const [id, t] of this.timers) {
        if (t.due <= end && (t.due < nextDue || (t.due === nextDue && id < nextId))) {
          nextDue = t.due;
          nextId = id;
        }
      }
      if (nextId < 0) break;
      const t = this.timers.get(nextId)!;
      this.timers.delete(nextId);
      this.current = Math.max(this.current, t.due);
      t.fn();
    }
    this.current = end;
  }

  /** How many timers are pending: tests use it to see that nothing is left armed. */
  get pending(): number {
    return this.timers.size;
  }
}
