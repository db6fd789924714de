/**
 * A computation written as a generator that yields at points where it may
 * pause (after each placement, each node of a system job): run to the end at
 * once, or in slices that give the event loop back between them.
 */
export type Steps<T> = Generator<void, T, void>;

/**
 * How long one slice may hold the event loop. A heartbeat or a client RPC
 * that arrives during a placement storm waits at most about this long.
 */
export const SLICE_MS = 4;

/** Steps between two looks at the clock at most: a step is a placement (microseconds), the clock costs more than a yield. */
export const STEPS_PER_CLOCK_READ = 16;

/**
 * Steps to take before the next look at the clock, from what this slice's
 * `steps` took in `elapsedMs`: up to {@link STEPS_PER_CLOCK_READ} for steps
 * of microseconds, 1 for steps that take a good part of a slice (a placement
 * with affinities or spreads scores up to thousands of nodes).
 */
export function clockStride(elapsedMs: number, steps: number, sliceMs: number): number {
  const perStep = elapsedMs / Math.max(1, steps);
  if (perStep <= 0) return STEPS_PER_CLOCK_READ;
  return Math.max(1, Math.min(STEPS_PER_CLOCK_READ, Math.floor(sliceMs / 4 / perStep)));
}

export function runToEnd<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * Runs `steps` in slices of about `sliceMs`, with a `setImmediate` turn
 * between them so I/O waiting meanwhile (heartbeats, reads) is served. The
 * tables may change during a turn: what the computation read before stays as
 * read, what it reads after is newer; the plan applier checks every node
 * again against the tables it applies to, so a plan from a moving view is
 * only ever refused or partly applied, never over-commits.
 */
export async function runSliced<T>(steps: Steps<T>, sliceMs = SLICE_MS): Promise<T> {
  let start = performance.now();
  let n = 0;
  // The first look comes after one step: how long a step takes decides how often to look again.
  let look = 1;
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    if (++n < look) continue;
    const now = performance.now();
    if (now < start + sliceMs) {
      look = n + clockStride(now - start, n, sliceMs);
      continue;
    }
    await new Promise<void>((resolve) => setImmediate(resolve));
    start = performance.now();
    n = 0;
    look = 1;
  }
}
