import type { Filter } from "../src/query/filter/index.ts";
import { FilterError } from "../src/query/filter/index.ts";
import { type CreateIndexKey, createIndexIdTokenizer, paginate, seekRow } from "../src/query/paginator.ts";
import type { Table } from "../src/store/table.ts";
import type { EvaluationRow } from "./evals.ts";

/**
 * The pages of a delete-by-filter (seed 001), found by the handler and found
 * again at apply with the same order, the same token comparison and the same
 * predicate. A page is a range of the evals table in its (CreateIndex, ID)
 * order, from the token of its first deletable evaluation to the token of
 * its last, holding at most PerPage rows of any kind: that bounds the apply,
 * and ranges of consecutive pages never overlap or leave a deletable
 * evaluation between them. Evaluations created after the handler started
 * sort after every range (their CreateIndex is higher), so they are left
 * alone.
 */

export const tokenizer = createIndexIdTokenizer;

/** Whether a row is to be deleted: delete-safe, then the filter (an evaluation error skips the row, as Nomad does). */
export type Deletable = (row: EvaluationRow) => boolean;

export function deletable(filter: Filter, isSafe: (row: EvaluationRow) => boolean): Deletable {
  return (row) => isSafe(row) && matchesLeniently(filter, row);
}

function matchesLeniently(filter: Filter, row: EvaluationRow): boolean {
  try {
    return filter.matches(row);
  } catch (err) {
    if (err instanceof FilterError) return false;
    throw err;
  }
}

export interface FoundPage {
  readonly nextToken: string;
  readonly lastToken: string;
  readonly expected: number;
}

export interface Scan {
  /** The page found in this window, if any row in it was deletable. */
  readonly page: FoundPage | undefined;
  /** Where the next window starts (exclusive), or undefined when the rows ran out. */
  readonly resumeAfter: CreateIndexKey | undefined;
}

/**
 * Scans one window of at most `perPage` rows after `after` (exclusive),
 * stopping at the first row created after `ceiling`. The window ends early
 * once it holds `perPage` deletable rows.
 */
export function scanWindow(
  evals: Table<EvaluationRow>,
  isDeletable: Deletable,
  after: CreateIndexKey | undefined,
  ceiling: number,
  perPage: number,
): Scan {
  let scanned = 0;
  let first: EvaluationRow | undefined;
  let last: EvaluationRow | undefined;
  let expected = 0;
  let lastScanned: EvaluationRow | undefined;
  for (const row of evals.list(after && seekRow<EvaluationRow>(after))) {
    if (after && tokenizer.compare(row, after) <= 0) continue;
    if (row.CreateIndex > ceiling) {
      return { page: found(first, last, expected), resumeAfter: undefined };
    }
    scanned++;
    lastScanned = row;
    if (isDeletable(row)) {
      first ??= row;
      last = row;
      expected++;
    }
    if (scanned === perPage) break;
  }
  const resumeAfter =
    scanned === perPage && lastScanned
      ? { createIndex: lastScanned.CreateIndex, id: lastScanned.ID }
      : undefined;
  return { page: found(first, last, expected), resumeAfter };
}

function found(
  first: EvaluationRow | undefined,
  last: EvaluationRow | undefined,
  expected: number,
): FoundPage | undefined {
  if (!first || !last) return undefined;
  return { nextToken: tokenizer.token(first), lastToken: tokenizer.token(last), expected };
}

/**
 * The page a delete record names, as the table holds it now: every
 * deletable row from `nextToken` through `lastToken`, at most `perPage`.
 * Undefined if a token is not one the handler writes.
 */
export function recreatePage(
  evals: Table<EvaluationRow>,
  isDeletable: Deletable,
  nextToken: string,
  lastToken: string,
  perPage: number,
): EvaluationRow[] | undefined {
  const from = tokenizer.parse(nextToken);
  const to = tokenizer.parse(lastToken);
  if (from === undefined || to === undefined) return undefined;
  const range = function* () {
    for (const row of evals.list(seekRow<EvaluationRow>(from))) {
      if (tokenizer.compare(row, to) > 0) return;
      yield row;
    }
  };
  // Safety and filter run as the paginator's `allow`, the same predicate the
  // handler used; the paginator skips anything before the token.
  return paginate(range(), { tokenizer, nextToken, perPage, allow: isDeletable }).items;
}
