import { setImmediate as nextTurn } from "node:timers/promises";

/**
 * How long one slice of a read may hold the event loop. Heartbeats, client
 * RPCs and every other read share the loop; a filter over a million rows
 * takes hundreds of milliseconds, so it runs in slices this long with the
 * loop's I/O served in between.
 */
export const SLICE_MS = 4;

/** Rows between clock reads: a row costs well under a microsecond to a few, so this stays within a slice. */
const ROWS_PER_CLOCK_CHECK = 128;

/**
 * Visits `rows` until `visit` returns false or the rows run out, yielding to
 * the event loop whenever a slice's time is spent. Tables may change during a
 * yield and their iterators must not be resumed across a change, so after a
 * yield the walk continues from `resume(lastVisited)` (rows strictly after it,
 * in the same order). Without `resume`, `rows` must be safe to iterate across
 * yields (an array, or a copy).
 */
export async function walkInSlices<Row>(
  rows: Iterable<Row>,
  visit: (row: Row) => boolean,
  resume?: (after: Row) => Iterable<Row>,
  sliceMs = SLICE_MS,
): Promise<void> {
  let iterator = rows[Symbol.iterator]();
  let last: Row | undefined;
  let visited = false;
  let sliceEnd = performance.now() + sliceMs;
  for (let n = 1; ; n++) {
    if (n % ROWS_PER_CLOCK_CHECK === 0 && performance.now() > sliceEnd) {
      await nextTurn();
      if (resume !== undefined && visited) iterator = resume(last as Row)[Symbol.iterator]();
      sliceEnd = performance.now() + sliceMs;
    }
    const next = iterator.next();
    if (next.done) return;
    last = next.value;
    visited = true;
    if (!visit(next.value)) return;
  }
}

/** The rows of `rows` after the first one for which `atOrBefore` stops holding. */
export function* skipWhile<Row>(rows: Iterable<Row>, atOrBefore: (row: Row) => boolean): Generator<Row> {
  let skipping = true;
  for (const row of rows) {
    if (skipping && atOrBefore(row)) continue;
    skipping = false;
    yield row;
  }
}

/** Elements JSON-encoded between clock reads. */
const ELEMENTS_PER_CHUNK = 256;

/**
 * A JSON array as text chunks, encoded in slices that yield to the event loop:
 * a list of a million rows takes seconds to encode, far too long to hold the
 * loop in one JSON.stringify. The same text JSON.stringify would give.
 */
export async function* jsonArrayInSlices(rows: readonly unknown[]): AsyncGenerator<string> {
  let sliceEnd = performance.now() + SLICE_MS;
  let chunk = "[";
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) chunk += ",";
    chunk += JSON.stringify(rows[i]) ?? "null";
    if ((i + 1) % ELEMENTS_PER_CHUNK === 0) {
      yield chunk;
      chunk = "";
      if (performance.now() > sliceEnd) {
        await nextTurn();
        sliceEnd = performance.now() + SLICE_MS;
      }
    }
  }
  yield `${chunk}]`;
}

/**
 * Runs `each` over `items`, yielding to the event loop whenever a slice's
 * time is spent: for work of some microseconds an item (signing ten
 * thousand workload identities would hold the loop for a third of a
 * second). `items` must be safe to iterate across yields.
 */
export async function inSlices<T>(
  items: Iterable<T>,
  each: (item: T) => void,
  sliceMs = SLICE_MS,
): Promise<void> {
  let sliceEnd = performance.now() + sliceMs;
  for (const item of items) {
    if (performance.now() > sliceEnd) {
      await nextTurn();
      sliceEnd = performance.now() + sliceMs;
    }
    each(item);
  }
}
