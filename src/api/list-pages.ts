import { FilterError } from "../query/filter/index.ts";
import {
  type CreateIndexKey,
  createIndexIdTokenizer,
  idTokenizer,
  type ListQuery,
  type Page,
  paginateInSlices,
  seekRow,
} from "../query/paginator.ts";
import { QueryError } from "../query/query-error.ts";
import type { IndexedRow, Table } from "../store/table.ts";
import { ApiError } from "./api-error.ts";

/** Nomad's `namespace=*`. */
export const ALL_NAMESPACES = "*";

/** Filter and paging problems are the caller's: 400 with the paginator's wording (also when `run` is async). */
export function badRequestOnQueryError<T>(run: () => T): T {
  try {
    const result = run();
    return (result instanceof Promise ? result.catch(rethrowAsBadRequest) : result) as T;
  } catch (err) {
    return rethrowAsBadRequest(err);
  }
}

function rethrowAsBadRequest(err: unknown): never {
  if (err instanceof QueryError || err instanceof FilterError) throw ApiError.badRequest(err.message);
  throw err;
}

/** A row Nomad lists in creation order: evaluations, allocations, deployments. */
export interface CreatedRow extends IndexedRow {
  readonly ID: string;
}

/** Rows in (CreateIndex, ID) order starting at `from` (or the first), descending when `reverse`. */
export type CreationOrder<Row> = (from: CreateIndexKey | undefined, reverse: boolean) => Iterable<Row>;

/** The whole table in its listing order, entered at `from` by a binary search. */
export function tableCreationOrder<Row extends CreatedRow>(table: Table<Row>): CreationOrder<Row> {
  return (from, reverse) => table.list(from && seekRow<Row>(from), reverse);
}

export interface CreationPageParams<Row> {
  /** `?prefix=`: an ID prefix. */
  readonly prefix: string;
  readonly list: ListQuery;
  /** The namespace and ACL checks, run before the filter as Nomad runs them. */
  readonly allow: (row: Row) => boolean;
  /** Where the rows come from when there is no prefix (default: the whole table). */
  readonly ordered?: CreationOrder<Row>;
}

/**
 * One page of Eval.List, Alloc.List or Deployment.List: with a prefix, in ID
 * order with an `ID` token; otherwise in (CreateIndex, ID) order with a
 * `CreateIndex.ID` token. Throws QueryError when the filter fails on a row.
 */
export function pageByCreation<Row extends CreatedRow>(
  table: Table<Row>,
  { prefix, list, allow, ordered = tableCreationOrder(table) }: CreationPageParams<Row>,
): Promise<Page<Row>> {
  const common = {
    perPage: list.perPage,
    nextToken: list.nextToken,
    reverse: list.reverse,
    filter: list.filter,
    allow,
  };
  if (prefix !== "") {
    // The ID index has no reverse walk; prefix matches are few enough to reverse in memory.
    if (list.reverse)
      return paginateInSlices([...table.withPrefix(prefix)].reverse(), { ...common, tokenizer: idTokenizer });
    return paginateInSlices(table.withPrefix(prefix), {
      ...common,
      tokenizer: idTokenizer,
      seek: (id) => table.withPrefix(prefix, id),
    });
  }
  return paginateInSlices(ordered(undefined, list.reverse), {
    ...common,
    tokenizer: createIndexIdTokenizer,
    seek: (key) => ordered(key, list.reverse),
  });
}
