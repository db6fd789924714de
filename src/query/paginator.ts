import type { Filter } from "./filter/index.ts";
import { compileFilter, FilterError } from "./filter/index.ts";
import { queryBool } from "./query-bool.ts";
import { QueryError } from "./query-error.ts";
import { skipWhile, walkInSlices } from "./sliced-walk.ts";

/**
 * One paginator for every list endpoint, with Nomad's semantics
 * (nomad/state/paginator): rows before `nextToken` in the iteration direction
 * are skipped without being filtered; from there on, rows must pass `allow`
 * (the ACL namespace check) and then the bexpr filter; `perPage` counts rows
 * that passed; the returned token is the token of the first row that did not
 * fit, or "" when the rows ran out.
 *
 * The one deliberate difference: Nomad 1.5 decides "before the token" by
 * comparing token *strings* (`token < nextToken`), which disagrees with the
 * row order as soon as a token has a numeric part — "12.x" sorts after
 * "102.x" — so pages crossing 9→10, 99→100, 999→1000 skip or repeat rows
 * (fixed upstream only in 2025). Here each tokenizer compares a row with the
 * token in the table's own order: CreateIndex numerically, then ID.
 */

/**
 * How an endpoint names a row's position (the `X-Nomad-NextToken` value) and
 * how a client's token compares with rows, in the order the table iterates.
 * `Key` is the parsed token a table's `seek` receives.
 */
export interface Tokenizer<Row, Key> {
  /** The token for `row`. */
  token(row: Row): string;
  /** The client's token as a position, or undefined if it is not one this tokenizer produces. */
  parse(token: string): Key | undefined;
  /** Negative when `row` sorts before `key` in ascending table order, 0 at it, positive after. */
  compare(row: Row, key: Key): number;
}

export interface PaginateOptions<Row, Key> {
  /** Rows per page; 0 or absent means all. */
  readonly perPage?: number;
  /** Resume at this token ("" or absent: from the first row). */
  readonly nextToken?: string;
  /** The rows arrive in descending order; skip rows *after* the token instead of before. */
  readonly reverse?: boolean;
  readonly filter?: Filter | undefined;
  /** Checked before the filter, as Nomad checks namespace ACLs before bexpr; rows it rejects are never filtered. */
  readonly allow?: (row: NoInfer<Row>) => boolean;
  /** NoInfer: the row type comes from `rows`; a tokenizer for a supertype (`{ ID }`) fits any row. */
  readonly tokenizer: Tokenizer<NoInfer<Row>, Key>;
  /**
   * Lets a sorted table start near the token instead of at its first row.
   * Must yield rows in the same order and direction as the full iterable,
   * starting at or before the first row not "before" `key`; the paginator
   * still skips any earlier rows it is given, so an approximate seek is fine.
   */
  readonly seek?: (key: Key) => Iterable<NoInfer<Row>>;
}

export interface Page<Row> {
  readonly items: Row[];
  /** "" when there are no more rows. */
  readonly nextToken: string;
}

export function paginate<Row, Key>(rows: Iterable<Row>, options: PaginateOptions<Row, Key>): Page<Row> {
  const page = new PageCollector(options);
  for (const row of page.source(rows)) if (!page.offer(row)) break;
  return page.result();
}

/**
 * The same page, read in slices that yield to the event loop (see
 * walkInSlices): for reads whose cost grows with the table. With `seek`, the
 * walk re-enters the table after each yield just past the last row it saw, so
 * the table may change in between; without it, `rows` must be safe to iterate
 * across yields (an array).
 */
export async function paginateInSlices<Row, Key>(
  rows: Iterable<Row>,
  options: PaginateOptions<Row, Key>,
): Promise<Page<Row>> {
  const page = new PageCollector(options);
  const { seek, tokenizer, reverse = false } = options;
  const resume =
    seek &&
    ((last: Row) => {
      const key = tokenizer.parse(tokenizer.token(last));
      if (key === undefined) throw new Error(`tokenizer cannot parse its own token ${tokenizer.token(last)}`);
      return skipWhile(seek(key), (row) =>
        reverse ? tokenizer.compare(row, key) >= 0 : tokenizer.compare(row, key) <= 0,
      );
    });
  await walkInSlices(page.source(rows), (row) => page.offer(row), resume);
  return page.result();
}

/** One page being filled, one row at a time, with Nomad's paginator rules. */
class PageCollector<Row, Key> {
  private readonly items: Row[] = [];
  private nextToken = "";
  private found: boolean;
  private readonly perPage: number;
  /** Where a row stands relative to the client's token, while it has not been reached. */
  private readonly position: ((row: Row) => number) | undefined;
  private readonly key: Key | undefined;

  constructor(private readonly options: PaginateOptions<Row, Key>) {
    const perPage = options.perPage ?? 0;
    if (!Number.isSafeInteger(perPage) || perPage < 0) {
      throw new RangeError(`perPage must be a non-negative integer, got ${perPage}`);
    }
    this.perPage = perPage;
    const target = options.nextToken ?? "";
    this.found = target === "";
    if (this.found) return;
    const { tokenizer } = options;
    const key = tokenizer.parse(target);
    this.key = key;
    this.position =
      key !== undefined
        ? (row) => tokenizer.compare(row, key)
        : // A token we never issued: place it the way Nomad would, by string order.
          (row) => compareCodePoints(tokenizer.token(row), target);
  }

  /** Where to start reading: near the token when the table can seek. */
  source(rows: Iterable<Row>): Iterable<Row> {
    const { seek } = this.options;
    return this.key !== undefined && seek !== undefined ? seek(this.key) : rows;
  }

  /** Takes `row` if it belongs on the page; false once the page is full. */
  offer(row: Row): boolean {
    const { allow, filter, reverse = false, tokenizer } = this.options;
    if (!this.found && this.position !== undefined) {
      const c = this.position(row);
      if (reverse ? c > 0 : c < 0) return true;
    }
    if (allow !== undefined && !allow(row)) return true;
    if (filter !== undefined && !passes(filter, row)) return true;
    this.found = true;
    if (this.perPage > 0 && this.items.length === this.perPage) {
      this.nextToken = tokenizer.token(row);
      return false;
    }
    this.items.push(row);
    return true;
  }

  result(): Page<Row> {
    return { items: this.items, nextToken: this.nextToken };
  }
}

function passes(filter: Filter, row: unknown): boolean {
  try {
    return filter.matches(row);
  } catch (err) {
    if (err instanceof FilterError) {
      // Nomad aborts the page and answers 400 with this wording.
      throw new QueryError(`failed to read result page: ${err.detail}`, { cause: err });
    }
    throw err;
  }
}

// ---- tokenizers (nomad/state/paginator/tokenizer.go: parts joined with ".") ----

/** Token `ID`, table ordered by ID (prefix searches, Node.List, ACL tokens by accessor). */
export const idTokenizer: Tokenizer<{ readonly ID: string }, string> = {
  token: (row) => row.ID,
  parse: (token) => token,
  compare: (row, key) => compareCodePoints(row.ID, key),
};

export interface CreateIndexKey {
  readonly createIndex: number;
  readonly id: string;
}

/** A row that sorts where `key` does, to enter a table listed in (CreateIndex, ID) order. */
export function seekRow<Row extends { readonly CreateIndex: number; readonly ID: string }>(
  key: CreateIndexKey,
): Row {
  // Only the two fields the order reads are present; no table ever stores this row.
  return { CreateIndex: key.createIndex, ID: key.id } as Row;
}

/**
 * Token `CreateIndex.ID`, table ordered by CreateIndex then ID (Eval.List,
 * Alloc.List, Deployment.List without a prefix). A bare number is accepted as
 * "start at that index".
 */
export const createIndexIdTokenizer: Tokenizer<
  { readonly CreateIndex: number; readonly ID: string },
  CreateIndexKey
> = {
  token: (row) => `${row.CreateIndex}.${row.ID}`,
  parse: (token) => {
    const m = /^([0-9]+)(?:\.([\s\S]*))?$/.exec(token);
    if (m === null) return undefined;
    // Indexes beyond 2^53 cannot occur; they still parse, as "after every row".
    return { createIndex: Number(m[1]), id: m[2] ?? "" };
  },
  compare: (row, key) =>
    row.CreateIndex !== key.createIndex
      ? row.CreateIndex < key.createIndex
        ? -1
        : 1
      : compareCodePoints(row.ID, key.id),
};

export interface NamespaceKey {
  readonly namespace: string;
  readonly id: string;
}

/**
 * Token `Namespace.ID`, table ordered by namespace then ID (Job.List, CSI
 * volumes). Namespace names cannot contain ".", so the first "." splits. The
 * order is the compound index's, where "a" < "a-b" even though "a.x" > "a-b.x"
 * as strings. A token without "." means "start of that namespace".
 */
export const namespaceIdTokenizer: Tokenizer<
  { readonly Namespace: string; readonly ID: string },
  NamespaceKey
> = {
  token: (row) => `${row.Namespace}.${row.ID}`,
  parse: (token) => {
    const dot = token.indexOf(".");
    return dot < 0
      ? { namespace: token, id: "" }
      : { namespace: token.slice(0, dot), id: token.slice(dot + 1) };
  },
  compare: (row, key) => compareCodePoints(row.Namespace, key.namespace) || compareCodePoints(row.ID, key.id),
};

/**
 * Code point order, which is the byte order of UTF-8 and so the order of
 * go-memdb's string indexes. Plain `<` on JS strings compares UTF-16 units and
 * puts U+E000..U+FFFF after astral characters; only that case needs fixing.
 */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) {
      if (x >= 0xd800 && y >= 0xd800) return surrogateRank(x) - surrogateRank(y);
      return x - y;
    }
  }
  return a.length - b.length;
}

/** Lifts surrogates (0xD800..0xDFFF) above 0xFFFF so astral characters sort after the whole BMP. */
function surrogateRank(unit: number): number {
  return unit <= 0xdfff ? unit + 0x2800 : unit;
}

// ---- HTTP query parameters ----

export interface ListQuery {
  /** 0 means all rows. */
  readonly perPage: number;
  /** "" means from the start. */
  readonly nextToken: string;
  readonly reverse: boolean;
  readonly filter: Filter | undefined;
}

const MAX_PER_PAGE = 2_147_483_647; // Nomad's per_page is an int32.

/**
 * Reads `per_page`, `next_token`, `reverse` and `filter` as every Nomad list
 * endpoint does. Nomad silently ignores an unparseable `per_page` and treats
 * any `reverse` other than "true" as false; here `reverse` is read as every
 * query boolean is (Go's ParseBool: `reverse=1` too), and either one
 * unparseable is a 400, because a silently ignored `per_page=-1` or
 * `reverse=yes` returns a page the client did not ask for.
 */
export function parseListQuery(query: Readonly<Record<string, unknown>>): ListQuery {
  const perPageText = param(query, "per_page");
  let perPage = 0;
  if (perPageText !== "") {
    if (!/^[0-9]+$/.test(perPageText) || Number(perPageText) > MAX_PER_PAGE) {
      throw new QueryError(
        `per_page must be a non-negative integer no greater than ${MAX_PER_PAGE}, got ${JSON.stringify(perPageText)}`,
      );
    }
    perPage = Number(perPageText);
  }

  const reverse = queryBool(query, "reverse") ?? false;

  const filterText = param(query, "filter");
  let filter: Filter | undefined;
  if (filterText !== "") {
    try {
      filter = compileFilter(filterText);
    } catch (err) {
      if (err instanceof FilterError) {
        throw new QueryError(
          `failed to create result paginator: failed to read filter expression: ${err.detail}`,
          {
            cause: err,
          },
        );
      }
      throw err;
    }
  }

  return { perPage, nextToken: param(query, "next_token"), reverse, filter };
}

/** The first value of a parameter, as Go's url.Values.Get; numbers are accepted for already-coerced queries. */
function param(query: Readonly<Record<string, unknown>>, name: string): string {
  let value = query[name];
  if (Array.isArray(value)) value = value[0];
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  throw new QueryError(`${name} must be a single string value`);
}
