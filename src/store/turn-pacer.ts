import { type LoopTurn, loopTurn } from "./loop-turn.ts";

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
 * A time budget for a pacer's calls per turn, in place of a fixed count:
 * the quota follows what the calls of the last busy turn cost, measured
 * once their work has run.
 */
export interface TurnBudget {
  /** Milliseconds of the calls' work (their microtasks included) per turn. */
  readonly ms: number;
  /** The quota stays within these counts, whatever the calls cost. */
  readonly minPerTurn: number;
  readonly maxPerTurn: number;
}

/** The smallest queue; a power of two, as every size of the ring is. */
const FIRST_CAPACITY = 16;

/**
 * Runs callbacks at most `perTurn` per turn of the event loop, in order, the
 * rest on later turns (`setImmediate`), so the loop's I/O (heartbeats,
 * new requests) is served in between.
 *
 * Why per call and not per millisecond: a callback here only resolves a
 * promise; the work it releases runs afterwards, as microtasks of the same
 * turn, where no clock read inside the turn can see it (a TurnBudget reads
 * the clock behind the turn instead, below). A placement burst
 * applies one batch and wakes a thousand of the nodes' long polls at once;
 * released together, their answers held the loop for up to 230 ms after
 * the 5 ms apply slice that woke them.
 *
 * Calls made while the turn's quota is not used up run at once, so a quiet
 * server answers as before, with no added turn.
 *
 * With a TurnBudget the quota is not fixed: a second immediate queued right
 * behind the turn's runs once the turn's calls and the microtasks they
 * released are done (node drains those between two immediates), reads the
 * clock, and sets the next turns' quota to what fits the budget at the cost
 * per call just seen. Calls that cost 100 µs then run eighty to a turn of
 * 8 ms, and calls that cost 2 ms four.
 *
 * What it queues are items handed to `call` (by default the items are the
 * callbacks themselves), so a caller with objects to release (Watches)
 * makes no closure per item. The queue is a ring that grows and is kept:
 * a burst's thousands of wakes allocate nothing once it has grown.
 *
 * The pacers of one thread share the loop iteration's allowance (LoopTurn,
 * unless given none): a turn runs no more calls than fit what is left of
 * it at the cost per call last measured (a second immediate behind the
 * turn, as for a TurnBudget), and at least `minPerTurn` (one without a
 * budget), so every pacer moves on in every iteration however the others
 * spent it. A call made outside a turn runs at once while the turn's
 * least is not used up or, once some step of the loop left work for later
 * (LoopTurn.contended), while the iteration has some of its allowance
 * left: a quiet loop runs every call at once, as before.
 */
export class TurnPacer<T = () => void> {
  private ring: (T | undefined)[] = new Array(FIRST_CAPACITY);
  private head = 0;
  private count = 0;
  /** Callbacks run since the last turn began (the last `setImmediate` of this pacer). */
  private used = 0;
  private scheduled = false;
  /** Calls a turn may run: `perTurn`, or what the budget allows at the last cost seen. */
  private quota: number;
  /** When the last turn began, and how many calls it ran (for the budget's measure). */
  private turnBegan = 0;
  private ranInTurn = 0;
  /** What a call cost, its microtasks included, in the last turn measured (0: not measured yet). */
  private perCallMs = 0;
  /** Calls a turn runs however little of the loop's allowance is left. */
  private readonly minPerTurn: number;

  constructor(
    perTurn = CALLS_PER_TURN,
    // The default suits T = () => void only; a pacer of other items passes its own.
    private readonly call: (item: T) => void = invoke as unknown as (item: T) => void,
    private readonly budget?: TurnBudget,
    private readonly loop: LoopTurn | undefined = loopTurn,
  ) {
    if (!(perTurn >= 1)) throw new Error(`perTurn must be at least 1, got ${perTurn}`);
    if (budget && !(budget.minPerTurn >= 1 && budget.maxPerTurn >= budget.minPerTurn && budget.ms > 0))
      throw new Error("a turn budget needs ms > 0 and 1 <= minPerTurn <= maxPerTurn");
    this.quota = perTurn;
    this.minPerTurn = Math.min(perTurn, budget?.minPerTurn ?? 1);
  }

  /** Calls the next turn may run. */
  get perTurn(): number {
    return this.quota;
  }

  /** Callbacks waiting for a later turn. */
  get waiting(): number {
    return this.count;
  }

  run(item: T): void {
    if (
      this.count === 0 &&
      this.used < this.quota &&
      (this.loop === undefined || this.used < this.minPerTurn || this.fitsNow(this.loop))
    ) {
      this.used++;
      this.schedule();
      this.call(item);
      return;
    }
    this.push(item);
    this.loop?.deferred(this);
    this.schedule();
  }

  private push(item: T): void {
    if (this.count === this.ring.length) this.grow();
    this.ring[(this.head + this.count) & (this.ring.length - 1)] = item;
    this.count++;
  }

  private grow(): void {
    const old = this.ring;
    const ring: (T | undefined)[] = new Array(old.length * 2);
    for (let i = 0; i < this.count; i++) ring[i] = old[(this.head + i) & (old.length - 1)];
    this.ring = ring;
    this.head = 0;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.turn);
    if (this.budget || this.loop) setImmediate(this.measure);
  }

  private readonly turn = (): void => {
    this.scheduled = false;
    this.used = 0;
    this.turnBegan = performance.now();
    const quota = this.turnQuota();
    try {
      while (this.count > 0 && this.used < quota) {
        const item = this.ring[this.head] as T;
        // Not kept alive by the queue once run.
        this.ring[this.head] = undefined;
        this.head = (this.head + 1) & (this.ring.length - 1);
        this.count--;
        this.used++;
        this.call(item);
      }
    } finally {
      this.ranInTurn = this.used;
      // A turn that ran something opens the next one (its quota counts until then).
      if (this.used > 0) this.schedule();
      if (this.count > 0) this.loop?.deferred(this);
    }
  };

  /**
   * Whether one more call fits what is left of the loop's iteration. The
   * calls made since the turn count at the last cost seen: those made in
   * the same callback (the wakes an apply slice releases) have not run
   * their work yet, and the clock cannot see it.
   */
  private fitsNow(loop: LoopTurn): boolean {
    return !loop.contended || loop.remaining() - this.used * this.perCallMs > 0;
  }

  /** This turn's calls: the quota, or fewer if the loop's iteration has not that much left. */
  private turnQuota(): number {
    if (this.loop === undefined || this.count === 0) return this.quota;
    this.loop.enterTurn();
    const left = this.loop.share(this);
    if (this.perCallMs <= 0) return left > 0 ? this.quota : this.minPerTurn;
    const fits = Math.floor(left / this.perCallMs);
    return Math.min(this.quota, Math.max(this.minPerTurn, fits));
  }

  /** Right behind a turn (see TurnBudget): the cost per call, and the quota for it. */
  private readonly measure = (): void => {
    if (this.ranInTurn === 0) return;
    const perCall = (performance.now() - this.turnBegan) / this.ranInTurn;
    this.perCallMs = perCall;
    this.ranInTurn = 0;
    const budget = this.budget;
    if (!budget) return;
    const fits = perCall > 0 ? Math.floor(budget.ms / perCall) : budget.maxPerTurn;
    this.quota = Math.min(budget.maxPerTurn, Math.max(budget.minPerTurn, fits));
  };
}

function invoke(callback: () => void): void {
  callback();
}
