import { compareStrings } from "../store/sorted-list.ts";
import type { IndexedRow, Table } from "../store/table.ts";
import { skipWhile, walkInSlices } from "./sliced-walk.ts";

/**
 * Visits the rows of `table` whose primary key starts with `prefix`, in key
 * order, in slices that yield to the event loop (see walkInSlices). After a
 * yield the walk resumes at the first key after the last one visited, so rows
 * added or removed meanwhile are seen or skipped as the table then is.
 */
export async function walkByKey<R extends IndexedRow>(
  table: Table<R>,
  prefix: string,
  visit: (row: R) => boolean,
  sliceMs?: number,
): Promise<void> {
  const key = table.spec.key;
  await walkInSlices(
    table.withPrefix(prefix),
    visit,
    (after) => {
      const last = key(after);
      return skipWhile(table.withPrefix(prefix, last), (row) => compareStrings(key(row), last) <= 0);
    },
    sliceMs,
  );
}

/** The first rows a walk accepted, and whether another one follows them. */
export interface Taken<R> {
  readonly rows: R[];
  readonly more: boolean;
}

/**
 * The first `limit` rows under `prefix` (key order) that `accept` takes, and
 * whether the table holds another: a bounded read that may still pass over
 * many rejected rows, so it walks in slices.
 */
export async function takeByKey<R extends IndexedRow>(
  table: Table<R>,
  prefix: string,
  limit: number,
  accept: (row: R) => boolean,
): Promise<Taken<R>> {
  const rows: R[] = [];
  let more = false;
  await walkByKey(table, prefix, (row) => {
    if (!accept(row)) return true;
    if (rows.length < limit) {
      rows.push(row);
      return true;
    }
    more = true;
    return false;
  });
  return { rows, more };
}
