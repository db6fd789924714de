/**
 * How long the paced steps of one iteration of the event loop may hold it
 * in all, before the loop polls its sockets again: the store's apply slice
 * (APPLY_SLICE_MS, 1 ms, which keeps first claim), then the watches' wakes,
 * the admitted requests, the client update window's answers and the history
 * file's encoding, which share what is left. Each had a budget of its own
 * before, and in a placement burst they ran one after the other in one
 * check phase: 20 ms and more of paced work between two polls, for which a
 * heartbeat that had just arrived waited. 2 ms rather than the 10 it was
 * first, then 5: on two cores shared with other busy threads, a turn's work
 * is stretched by about as much waiting for a core, so each shorter turn
 * cut the loop delay's p99 in the load benchmark's burst, with no fewer
 * placements (docs/architecture.md, "One allowance for one loop iteration").
 */
export const LOOP_TURN_MS = 2;

/**
 * The allowance of one iteration of the event loop, shared by its paced
 * steps: each asks what is left (`remaining`), does that much, and leaves
 * the rest of its backlog to a later iteration. Whatever runs in between
 * (the requests' microtasks, a heartbeat, a scavenge) is on the same clock,
 * since what a waiting socket sees is the loop's wall time.
 *
 * Node has no hook at an iteration's start, so one is opened by the first
 * step that asks, and closed by an immediate queued then. Node runs the
 * immediates queued before its check phase began in that check phase, in
 * order, and those queued while it runs in the next one. A paced step's
 * turn is an immediate (it says so: `enterTurn`): the first of a check
 * phase to ask queues the close ahead of every pacer's next turn, so the
 * close runs first in the next check phase and those turns find a new
 * iteration. A step that asks outside the check phase (a request parsed in
 * the poll phase and started at once, an apply slice started by the log's
 * tail) opens an iteration whose close would run ahead of the turns it
 * queued behind it in the coming check phase: that close queues itself
 * once more, so the check phase is in the iteration its poll phase began.
 *
 * Each iteration so runs to the start of a check phase, and the poll
 * phase before that start is counted in it: a request parsed there that
 * finds the allowance spent waits for the check phase right after, where
 * it is new. A quiet loop never spends its allowance: every step runs
 * everything at once, as without it. A step with nothing to do never
 * asks, and an open iteration costs an immediate or two, so an idle loop
 * stays idle.
 */
export class LoopTurn {
  private began = 0;
  private open = false;
  /** Opened outside a turn: the close waits for the end of the check phase that follows. */
  private closeAgain = false;
  private iteration = 0;
  /** The last iteration in which calls made at once are held to the allowance (`deferred`). */
  private contendedUntil = -1;
  /** The steps that left work for this iteration and have not had their share; and those for the next. */
  private waiting = new Set<object>();
  private waitingNext = new Set<object>();
  /** Milliseconds kept for a step that has not run in this iteration yet (the apply slice). */
  private reserved = 0;
  /** Milliseconds to keep in the next iteration (asked by a step that will run in it). */
  private reservedNext = 0;

  constructor(
    readonly allowanceMs = LOOP_TURN_MS,
    private readonly clock: () => number = () => performance.now(),
  ) {
    if (!(allowanceMs > 0)) throw new Error(`a loop turn's allowance must be positive, got ${allowanceMs}`);
  }

  /**
   * Milliseconds of this iteration's allowance left to a step that asks now,
   * less what is kept for a step still to run; negative once overrun.
   */
  remaining(): number {
    const now = this.clock();
    if (!this.open) this.begin(now);
    return this.allowanceMs - this.reserved - (now - this.began);
  }

  /** How many iterations were opened: a step can tell a new one from the one it ran in. */
  get iterations(): number {
    return this.iteration;
  }

  /**
   * A step leaves work for a later iteration: the loop is busy, and the
   * steps' calls made at once (a request parsed in the poll phase, the
   * wakes an apply slice releases) stay within the allowance in this
   * iteration and the next. On a quiet loop nothing is left for later, and
   * those calls all run at once however long the loop's other work (or the
   * wait for a core) made its iteration.
   */
  deferred(step?: object): void {
    if (!this.open) this.begin(this.clock());
    this.contendedUntil = this.iteration + 1;
    if (step !== undefined) this.waitingNext.add(step);
  }

  /**
   * What `step` may spend of what is left: an even share with the steps
   * that left work for this iteration and have not had their turn yet. In
   * a check phase the pacers' turns run in the order they were queued, the
   * same every iteration, and without shares the first would take it all
   * and the last only its least.
   */
  share(step: object): number {
    const left = this.remaining();
    this.waiting.delete(step);
    return left / (this.waiting.size + 1);
  }

  /** Whether a step left work for later in this iteration or the one before. */
  get contended(): boolean {
    return this.open && this.iteration <= this.contendedUntil;
  }

  /** A paced step's turn (an immediate of the check phase) begins. */
  enterTurn(): void {
    if (!this.open) this.begin(this.clock(), true);
  }

  /**
   * Keeps `ms` of the next iteration for a step that will run in it
   * whatever the others spent (the apply slice): the others stop short of
   * it until the step `claim`s it.
   */
  reserveNext(ms: number): void {
    this.reservedNext = Math.max(this.reservedNext, ms);
  }

  /** The reserving step runs: what it keeps is its to spend, counted as the clock goes. */
  claim(): void {
    if (!this.open) this.begin(this.clock());
    this.reserved = 0;
  }

  private begin(now: number, inTurn = false): void {
    this.open = true;
    this.closeAgain = !inTurn;
    this.began = now;
    this.iteration++;
    this.reserved = this.reservedNext;
    this.reservedNext = 0;
    const spent = this.waiting;
    spent.clear();
    this.waiting = this.waitingNext;
    this.waitingNext = spent;
    setImmediate(this.close);
  }

  private readonly close = (): void => {
    if (this.closeAgain) {
      // Opened outside the check phase: its turns are queued behind this.
      this.closeAgain = false;
      setImmediate(this.close);
      return;
    }
    this.open = false;
    // A reservation nobody claimed in its iteration lapses: its step had no backlog left.
    this.reserved = 0;
  };
}

/** The main loop's allowance, shared by every pacer of this thread (each worker thread has its own). */
export const loopTurn = new LoopTurn();
