import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileFilter, type Filter } from "../../src/query/filter/index.ts";
import {
  compareCodePoints,
  createIndexIdTokenizer,
  idTokenizer,
  namespaceIdTokenizer,
  type Page,
  type PaginateOptions,
  paginate,
  parseListQuery,
  type Tokenizer,
} from "../../src/query/paginator.ts";
import { QueryError } from "../../src/query/query-error.ts";

/**
 * Hardening: whatever `next_token`, `per_page`, `reverse` and `filter` a
 * client sends, the paginator answers or throws QueryError (a 400); and
 * paging through any table, in either direction, with any page size, visits
 * each matching row exactly once, in order.
 */

/** numRuns, multiplied by PROPERTY_RUNS_SCALE for a longer soak run (the default stays quick). */
const runs = (n: number) => ({ numRuns: n * Math.max(1, Number(process.env.PROPERTY_RUNS_SCALE) || 1) });

interface Row {
  readonly ID: string;
  readonly Namespace: string;
  readonly CreateIndex: number;
  readonly Status: string;
}

/** Code point order, computed independently of the code under test: UTF-8 bytes compare the same way. */
const utf8Order = (a: string, b: string) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);

/** How each table keys and orders its rows, written without the tokenizers. */
interface Table<Key> {
  readonly name: string;
  readonly tokenizer: Tokenizer<Row, Key>;
  readonly key: (row: Row) => string;
  readonly order: (a: Row, b: Row) => number;
}

const byId: Table<string> = {
  name: "ID",
  tokenizer: idTokenizer,
  key: (r) => r.ID,
  order: (a, b) => utf8Order(a.ID, b.ID),
};
const byCreateIndex: Table<{ createIndex: number; id: string }> = {
  name: "CreateIndex.ID",
  tokenizer: createIndexIdTokenizer,
  key: (r) => `${r.CreateIndex}\u0000${r.ID}`,
  order: (a, b) => a.CreateIndex - b.CreateIndex || utf8Order(a.ID, b.ID),
};
const byNamespace: Table<{ namespace: string; id: string }> = {
  name: "Namespace.ID",
  tokenizer: namespaceIdTokenizer,
  key: (r) => `${r.Namespace}\u0000${r.ID}`,
  order: (a, b) => utf8Order(a.Namespace, b.Namespace) || utf8Order(a.ID, b.ID),
};

// ---- arbitraries ----

/** Well-formed text of any plane (UTF-8 order is only defined for it), plus short ASCII for collisions. */
const text = fc.oneof(
  fc.string({ unit: "binary", maxLength: 6 }),
  fc.string({ unit: fc.constantFrom("a", "b", ".", "0", "1", "\uffff", "\u{10000}", "é"), maxLength: 4 }),
);
/** Namespace names cannot contain "." (the token splits on the first one). */
const namespace = fc.oneof(
  fc.constantFrom("default", "a", "a-b", "prod", ""),
  text.map((s) => s.replaceAll(".", "")),
);
const STATUSES = ["pending", "blocked", "complete"] as const;

const rowArb: fc.Arbitrary<Row> = fc.record({
  ID: text,
  Namespace: namespace,
  CreateIndex: fc.oneof(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 2 ** 40 })),
  Status: fc.constantFrom(...STATUSES),
});

/** A table: rows unique by the table's key, in ascending order. */
function tableRows<Key>(table: Table<Key>, maxLength = 40): fc.Arbitrary<Row[]> {
  // An empty token means "no more rows", so a table keyed by ID alone cannot
  // hold a row whose ID is "" (its token would end the listing early, as in
  // Nomad). Real IDs are UUIDs or validated names, never empty.
  const rows = table === (byId as Table<unknown>) ? rowArb.filter((r) => r.ID !== "") : rowArb;
  return fc.uniqueArray(rows, { maxLength, selector: table.key }).map((rows) => [...rows].sort(table.order));
}

const FILTERS: readonly (string | undefined)[] = [
  undefined,
  'Status == "pending"',
  'Status != "blocked"',
  'ID contains "a"',
  'not (Namespace == "default")',
  "CreateIndex == 3 or CreateIndex == 4",
];
const filterArb = fc.constantFrom(...FILTERS).map((f) => (f === undefined ? undefined : compileFilter(f)));

/** An ACL-style check, decided per row from a seed so it is arbitrary but stable. */
const allowArb = fc.option(
  fc.func(fc.boolean()).map((decide) => (row: Row) => decide(row.ID, row.Namespace, row.CreateIndex)),
  { nil: undefined },
);

const tableArb = fc.constantFrom<Table<unknown>>(
  byId as Table<unknown>,
  byCreateIndex as Table<unknown>,
  byNamespace as Table<unknown>,
);

// ---- helpers ----

/**
 * A sorted table's seek: binary search with the tokenizer's compare, then
 * start `slack` rows early (an approximate seek is allowed), in the
 * iteration direction.
 */
function seekable<Key>(sorted: readonly Row[], table: Table<Key>, reverse: boolean, slack: number) {
  return (key: Key): Iterable<Row> => {
    if (!reverse) {
      let lo = 0;
      let hi = sorted.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (table.tokenizer.compare(sorted[mid] as Row, key) < 0) lo = mid + 1;
        else hi = mid;
      }
      return sorted.slice(Math.max(0, lo - slack));
    }
    // Descending: start at the last row not after the key.
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (table.tokenizer.compare(sorted[mid] as Row, key) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return sorted.slice(0, Math.min(sorted.length, lo + slack)).reverse();
  };
}

interface Walk {
  readonly pages: Page<Row>[];
  readonly tokens: string[];
}

function pageThrough<Key>(
  rows: readonly Row[],
  options: Omit<PaginateOptions<Row, Key>, "nextToken">,
  maxPages: number,
): Walk {
  const pages: Page<Row>[] = [];
  const tokens: string[] = [];
  let nextToken = "";
  for (let i = 0; i <= maxPages; i++) {
    const page = paginate(rows, { ...options, nextToken });
    pages.push(page);
    if (page.nextToken === "") return { pages, tokens };
    tokens.push(page.nextToken);
    nextToken = page.nextToken;
  }
  throw new Error(`pagination did not end within ${maxPages + 1} pages`);
}

function passes(filter: Filter | undefined, allow: ((r: Row) => boolean) | undefined, row: Row): boolean {
  return (allow === undefined || allow(row)) && (filter === undefined || filter.matches(row));
}

// ---- properties ----

describe("paginator: paging visits every matching row exactly once, in order", () => {
  it("forward and reverse, any per_page, any filter and allow, with and without seek", () => {
    fc.assert(
      fc.property(
        tableArb.chain((table) => fc.tuple(fc.constant(table), tableRows(table))),
        fc.boolean(),
        fc.integer({ min: 1, max: 45 }),
        filterArb,
        allowArb,
        fc.option(fc.nat(3), { nil: undefined }),
        ([table, sorted], reverse, perPage, filter, allow, slack) => {
          const rows = reverse ? [...sorted].reverse() : sorted;
          const expected = rows.filter((r) => passes(filter, allow, r));
          const { pages, tokens } = pageThrough(
            rows,
            {
              perPage,
              reverse,
              filter,
              ...(allow === undefined ? {} : { allow }),
              tokenizer: table.tokenizer,
              ...(slack === undefined ? {} : { seek: seekable(sorted, table, reverse, slack) }),
            },
            rows.length + 1,
          );
          const items = pages.flatMap((p) => p.items);
          expect(items).toEqual(expected);
          // Every page but the last is full; the last is empty only when nothing matched.
          for (const p of pages.slice(0, -1)) expect(p.items).toHaveLength(perPage);
          const last = pages[pages.length - 1] as Page<Row>;
          expect(last.items.length).toBeLessThanOrEqual(perPage);
          if (expected.length > 0) expect(last.items.length).toBeGreaterThan(0);
          // Each token names the row that starts the next page.
          tokens.forEach((token, i) => {
            expect(table.tokenizer.token((pages[i + 1] as Page<Row>).items[0] as Row)).toBe(token);
          });
        },
      ),
      runs(300),
    );
  });

  it("a token issued for a row parses back to that row's position", () => {
    fc.assert(
      fc.property(
        tableArb.chain((table) => fc.tuple(fc.constant(table), tableRows(table, 20))),
        ([table, sorted]) => {
          for (const row of sorted) {
            const token = table.tokenizer.token(row);
            const key = table.tokenizer.parse(token);
            expect(key).not.toBeUndefined();
            for (const other of sorted) {
              expect(sign(table.tokenizer.compare(other, key))).toBe(sign(table.order(other, row)));
            }
          }
        },
      ),
      runs(200),
    );
  });

  it("any next_token (issued or not) starts the page at the first matching row not before it", () => {
    const tokenArb = fc.oneof(
      fc.string({ unit: "binary", maxLength: 10 }),
      fc.string({ maxLength: 10 }),
      fc
        .array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 8 })
        .map((units) => String.fromCharCode(...units)),
      fc.tuple(fc.nat(), text).map(([n, s]) => `${n}.${s}`),
      fc
        .tuple(fc.stringMatching(/^[0-9]{1,30}$/), fc.constantFrom("", ".", "x", ".a.b"))
        .map(([d, s]) => d + s),
      fc.constantFrom("", ".", "..", "0", "-1", "1e3", " 1", "1 ", "default.", "\u0000"),
    );
    fc.assert(
      fc.property(
        tableArb.chain((table) => fc.tuple(fc.constant(table), tableRows(table))),
        tokenArb,
        fc.boolean(),
        fc.integer({ min: 0, max: 10 }),
        filterArb,
        ([table, sorted], token, reverse, perPage, filter) => {
          const rows = reverse ? [...sorted].reverse() : sorted;
          let page: Page<Row>;
          try {
            page = paginate(rows, { perPage, reverse, filter, nextToken: token, tokenizer: table.tokenizer });
          } catch (err) {
            if (err instanceof QueryError) return;
            throw err;
          }
          // Where the paginator places the token: by the tokenizer's order if
          // it parses, else by string order, as Nomad does.
          const key = token === "" ? undefined : table.tokenizer.parse(token);
          const position = (r: Row) =>
            token === ""
              ? 0
              : key !== undefined
                ? table.tokenizer.compare(r, key)
                : compareCodePoints(table.tokenizer.token(r), token);
          const start = rows.findIndex(
            (r) => (reverse ? position(r) <= 0 : position(r) >= 0) && passes(filter, undefined, r),
          );
          const expected = start < 0 ? [] : rows.slice(start).filter((r) => passes(filter, undefined, r));
          const want = perPage === 0 ? expected : expected.slice(0, perPage);
          expect(page.items).toEqual(want);
          const after = expected[perPage];
          expect(page.nextToken).toBe(perPage > 0 && after !== undefined ? table.tokenizer.token(after) : "");
        },
      ),
      runs(400),
    );
  });

  it("a filter that fails on a row aborts the page with QueryError, nothing else", () => {
    const failing = compileFilter("Missing == 1");
    fc.assert(
      fc.property(tableRows(byId), fc.string({ maxLength: 6 }), (rows, token) => {
        try {
          const page = paginate(rows, { filter: failing, nextToken: token, tokenizer: idTokenizer });
          // Only possible when every row is before the token.
          expect(page.items).toEqual([]);
        } catch (err) {
          expect(err).toBeInstanceOf(QueryError);
        }
      }),
      runs(100),
    );
  });
});

describe("compareCodePoints", () => {
  const wellFormed = fc.string({ unit: "binary", maxLength: 8 });
  /** Pairs that share a prefix, so the comparison reaches the interesting characters. */
  const pair = fc.oneof(
    fc.tuple(wellFormed, wellFormed),
    fc
      .tuple(wellFormed, wellFormed, wellFormed)
      .map(([prefix, a, b]): [string, string] => [prefix + a, prefix + b]),
    fc
      .tuple(
        wellFormed,
        fc.constantFrom("\ud7ff", "\ue000", "\uffff", "\u{10000}", "\u{10ffff}", "\u{1f600}", "", "a"),
        fc.constantFrom("\ud7ff", "\ue000", "\uffff", "\u{10000}", "\u{10ffff}", "\u{1f600}", "", "a"),
      )
      .map(([prefix, a, b]): [string, string] => [prefix + a, prefix + b]),
  );

  it("agrees with the byte order of UTF-8 (Buffer.compare) for well-formed strings", () => {
    fc.assert(
      fc.property(pair, ([a, b]) => {
        expect(sign(compareCodePoints(a, b))).toBe(sign(utf8Order(a, b)));
        expect(sign(compareCodePoints(b, a))).toBe(sign(-utf8Order(a, b)));
      }),
      runs(2000),
    );
  });

  it("is a total order on arbitrary UTF-16 (lone surrogates too): antisymmetric, 0 only when equal", () => {
    const utf16 = fc
      .array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 6 })
      .map((units) => String.fromCharCode(...units));
    fc.assert(
      fc.property(utf16, utf16, utf16, (a, b, c) => {
        expect(sign(compareCodePoints(a, b))).toBe(sign(-compareCodePoints(b, a)));
        expect(compareCodePoints(a, b) === 0).toBe(a === b);
        if (compareCodePoints(a, b) <= 0 && compareCodePoints(b, c) <= 0) {
          expect(compareCodePoints(a, c)).toBeLessThanOrEqual(0);
        }
      }),
      runs(2000),
    );
  });
});

describe("parseListQuery on arbitrary query objects", () => {
  const paramValue = fc.oneof(
    fc.string({ maxLength: 12 }),
    fc.string({ unit: "binary", maxLength: 8 }),
    fc.stringMatching(/^[0-9]{1,12}$/),
    fc.constantFrom("0", "1", "-1", "2147483647", "2147483648", "1e3", " 5", "true", "false", "TRUE", ""),
    fc.constantFrom('Status == "pending"', "Status ==", "(", "not", 'ID matches "["', 'ID matches "a+"'),
    fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 }),
    fc.anything({ maxDepth: 2 }),
  );
  const query = fc.record(
    {
      per_page: paramValue,
      next_token: paramValue,
      reverse: paramValue,
      filter: paramValue,
      other: paramValue,
    },
    { requiredKeys: [] },
  );

  it("returns a ListQuery or throws QueryError", () => {
    fc.assert(
      fc.property(query, (q) => {
        try {
          const list = parseListQuery(q);
          expect(Number.isSafeInteger(list.perPage) && list.perPage >= 0).toBe(true);
          expect(typeof list.nextToken).toBe("string");
          expect(typeof list.reverse).toBe("boolean");
        } catch (err) {
          if (!(err instanceof QueryError)) throw err;
        }
      }),
      runs(1000),
    );
  });

  it("reads valid parameters as given", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2_147_483_647 }),
        fc.string({ unit: "binary", maxLength: 10 }),
        fc.boolean(),
        (perPage, nextToken, reverse) => {
          const list = parseListQuery({
            per_page: String(perPage),
            next_token: nextToken,
            reverse: String(reverse),
          });
          expect(list).toEqual({ perPage, nextToken, reverse, filter: undefined });
        },
      ),
      runs(300),
    );
  });
});
