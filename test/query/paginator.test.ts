import { describe, expect, it } from "vitest";
import { compileFilter } from "../../src/query/filter/index.ts";
import type { CreateIndexKey, PaginateOptions, Tokenizer } from "../../src/query/paginator.ts";
import {
  compareCodePoints,
  createIndexIdTokenizer,
  idTokenizer,
  namespaceIdTokenizer,
  paginate,
  parseListQuery,
} from "../../src/query/paginator.ts";
import { QueryError } from "../../src/query/query-error.ts";

interface Eval {
  ID: string;
  Namespace: string;
  CreateIndex: number;
  Status: string;
  JobID: string;
  Priority: number;
}

/** mulberry32: a tiny seeded PRNG so the data set is the same on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function uuid(rand: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(rand() * 16).toString(16)).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const STATUSES = ["pending", "blocked", "complete", "failed", "canceled"];
const NAMESPACES = ["default", "prod", "a", "a-b"];

/**
 * 10,000 evaluations in (CreateIndex, ID) order. Several share a CreateIndex
 * (as evals created by one raft entry do), and indexes start at 1, so pages
 * cross the 9→10, 99→100 and 999→1000 digit boundaries.
 */
function makeEvals(count: number): Eval[] {
  const rand = prng(1234);
  const out: Eval[] = [];
  let index = 1;
  while (out.length < count) {
    const shared = 1 + Math.floor(rand() * 4);
    for (let i = 0; i < shared && out.length < count; i++) {
      out.push({
        ID: uuid(rand),
        Namespace: NAMESPACES[Math.floor(rand() * NAMESPACES.length)] as string,
        CreateIndex: index,
        Status: STATUSES[Math.floor(rand() * STATUSES.length)] as string,
        JobID: `${rand() < 0.3 ? "batch" : "web"}-${Math.floor(rand() * 50)}`,
        Priority: 50,
      });
    }
    index += rand() < 0.1 ? 2 : 1;
  }
  return out.sort((x, y) => x.CreateIndex - y.CreateIndex || compareCodePoints(x.ID, y.ID));
}

const evals = makeEvals(10_000);

/** What a sorted table offers: binary search to the key, then iterate in the requested direction. */
function seekable<Key>(sorted: readonly Eval[], tokenizer: Tokenizer<Eval, Key>, reverse: boolean) {
  return (key: Key): Iterable<Eval> => {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (tokenizer.compare(sorted[mid] as Eval, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    // lo = first row not before key.
    if (!reverse) return sorted.slice(lo);
    let end = lo;
    while (end < sorted.length && tokenizer.compare(sorted[end] as Eval, key) === 0) end++;
    return sorted.slice(0, end).reverse();
  };
}

function pageAll<Key>(
  rows: readonly Eval[],
  options: Omit<PaginateOptions<Eval, Key>, "nextToken">,
): { items: Eval[]; pages: Eval[][] } {
  const items: Eval[] = [];
  const pages: Eval[][] = [];
  let nextToken = "";
  for (let guard = 0; guard <= rows.length + 1; guard++) {
    const page = paginate(rows, { ...options, nextToken });
    pages.push(page.items);
    items.push(...page.items);
    if (page.nextToken === "") return { items, pages };
    expect(page.nextToken).not.toBe(nextToken);
    nextToken = page.nextToken;
  }
  throw new Error("pagination did not terminate");
}

function expectPaged(pages: Eval[][], perPage: number): void {
  pages.slice(0, -1).forEach((page) => {
    expect(page.length).toBe(perPage);
  });
  const last = pages[pages.length - 1] ?? [];
  expect(last.length).toBeGreaterThan(0);
  expect(last.length).toBeLessThanOrEqual(perPage);
}

describe("the data set", () => {
  it("shares CreateIndex values and crosses digit-count boundaries", () => {
    const indexes = new Set(evals.map((e) => e.CreateIndex));
    expect(indexes.size).toBeLessThan(evals.length / 2);
    for (const [below, above] of [
      [9, 10],
      [99, 100],
      [999, 1000],
    ] as const) {
      expect(evals.some((e) => e.CreateIndex <= below)).toBe(true);
      expect(evals.some((e) => e.CreateIndex >= above)).toBe(true);
    }
  });

  it("is where Nomad 1.5's string comparison of tokens goes wrong", () => {
    // "12.x" > "102.y" as strings, although index 12 comes first.
    const key = createIndexIdTokenizer.parse("102.00000000-0000-0000-0000-000000000000") as CreateIndexKey;
    const row12 = { CreateIndex: 12, ID: "ffffffff-0000-0000-0000-000000000000" };
    expect(compareCodePoints(createIndexIdTokenizer.token(row12), "102.0")).toBeGreaterThan(0);
    expect(createIndexIdTokenizer.compare(row12, key)).toBeLessThan(0);
  });
});

describe("paging through 10,000 evaluations by CreateIndex.ID", () => {
  const reversed = [...evals].reverse();

  for (const perPage of [1, 7, 100]) {
    for (const reverse of [false, true]) {
      // per_page=1 scans from the start 10,000 times unless the table seeks.
      for (const seek of perPage === 1 ? [true] : [false, true]) {
        it(`per_page=${perPage} reverse=${reverse} seek=${seek}: every row once, in order`, () => {
          const rows = reverse ? reversed : evals;
          const { items, pages } = pageAll(rows, {
            perPage,
            reverse,
            tokenizer: createIndexIdTokenizer,
            ...(seek ? { seek: seekable(evals, createIndexIdTokenizer, reverse) } : {}),
          });
          expect(items.map((e) => e.ID)).toEqual(rows.map((e) => e.ID));
          expectPaged(pages, perPage);
        });
      }
    }
  }

  it("returns the token of the first row that did not fit", () => {
    const page = paginate(evals, { perPage: 7, tokenizer: createIndexIdTokenizer });
    const eighth = evals[7] as Eval;
    expect(page.items).toEqual(evals.slice(0, 7));
    expect(page.nextToken).toBe(`${eighth.CreateIndex}.${eighth.ID}`);
  });

  it("does not hand out an empty last page when the rows end exactly at a page boundary", () => {
    const rows = evals.slice(0, 14);
    const second = paginate(rows, {
      perPage: 7,
      tokenizer: createIndexIdTokenizer,
      nextToken: paginate(rows, { perPage: 7, tokenizer: createIndexIdTokenizer }).nextToken,
    });
    expect(second.items).toEqual(rows.slice(7));
    expect(second.nextToken).toBe("");
  });

  it("per_page 0 (or absent) means all rows", () => {
    expect(paginate(evals, { perPage: 0, tokenizer: createIndexIdTokenizer })).toEqual({
      items: evals,
      nextToken: "",
    });
    expect(paginate(evals, { tokenizer: createIndexIdTokenizer }).items).toHaveLength(evals.length);
  });
});

describe("tokens that point between rows", () => {
  const i = evals.findIndex((e, k) => k > 0 && (evals[k - 1] as Eval).CreateIndex === e.CreateIndex);
  const before = evals[i - 1] as Eval;
  const after = evals[i] as Eval;
  // Same CreateIndex, an ID strictly between the two rows' IDs.
  const between = `${before.CreateIndex}.${before.ID}0`;

  it("start at the next row going forward", () => {
    expect(compareCodePoints(`${before.ID}0`, after.ID)).toBeLessThan(0);
    const page = paginate(evals, { perPage: 3, nextToken: between, tokenizer: createIndexIdTokenizer });
    expect(page.items[0]).toBe(after);
  });

  it("start at the previous row going backward", () => {
    const page = paginate([...evals].reverse(), {
      perPage: 3,
      reverse: true,
      nextToken: between,
      tokenizer: createIndexIdTokenizer,
    });
    expect(page.items[0]).toBe(before);
  });

  it("a bare CreateIndex starts at that index's first row", () => {
    const page = paginate(evals, { perPage: 1, nextToken: "1000", tokenizer: createIndexIdTokenizer });
    expect(page.items[0]).toBe(evals.find((e) => e.CreateIndex >= 1000));
  });

  it("a token past the end yields nothing", () => {
    expect(paginate(evals, { nextToken: "99999999.x", tokenizer: createIndexIdTokenizer })).toEqual({
      items: [],
      nextToken: "",
    });
  });

  it("a token this tokenizer never issues falls back to Nomad's string order", () => {
    // "abc" sorts after every "<digits>.<id>" token, so nothing is at or after it.
    expect(paginate(evals, { nextToken: "abc", tokenizer: createIndexIdTokenizer }).items).toEqual([]);
  });
});

describe("with a filter", () => {
  const filter = compileFilter('Status == "pending" or JobID matches "^batch-1"');
  const expected = evals.filter((e) => e.Status === "pending" || /^batch-1/.test(e.JobID));

  for (const perPage of [7, 100]) {
    for (const reverse of [false, true]) {
      it(`per_page=${perPage} reverse=${reverse} counts only matching rows`, () => {
        const rows = reverse ? [...evals].reverse() : evals;
        const { items, pages } = pageAll(rows, {
          perPage,
          reverse,
          filter,
          tokenizer: createIndexIdTokenizer,
          seek: seekable(evals, createIndexIdTokenizer, reverse),
        });
        expect(items).toEqual(reverse ? [...expected].reverse() : expected);
        expectPaged(pages, perPage);
      });
    }
  }

  it("the next token names the first matching row that did not fit", () => {
    const page = paginate(evals, { perPage: 5, filter, tokenizer: createIndexIdTokenizer });
    const sixth = expected[5] as Eval;
    expect(page.nextToken).toBe(`${sixth.CreateIndex}.${sixth.ID}`);
  });

  it("a filter error aborts the page with Nomad's 400 message", () => {
    const bad = compileFilter("Stauts == pending");
    try {
      paginate(evals, { filter: bad, tokenizer: createIndexIdTokenizer });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(QueryError);
      expect((err as QueryError).status).toBe(400);
      expect((err as QueryError).message).toBe(
        'failed to read result page: error finding value in datum: /Stauts at part 0: couldn\'t find struct field with name "Stauts"',
      );
    }
  });

  it("rows before the token and rows `allow` rejects are never filtered", () => {
    // Only default-namespace rows from the token on carry the field the filter needs.
    const rows = evals.map((e, k) => (e.Namespace === "default" && k >= 5000 ? { ...e, Extra: 1 } : e));
    const token = createIndexIdTokenizer.token(rows[5000] as Eval);
    const page = paginate(rows, {
      perPage: 10,
      nextToken: token,
      filter: compileFilter("Extra == 1"),
      allow: (row) => row.Namespace === "default",
      tokenizer: createIndexIdTokenizer,
    });
    expect(page.items).toHaveLength(10);
    expect(page.items.every((e) => e.Namespace === "default")).toBe(true);
  });
});

describe("each tokenizer", () => {
  it("ID: token is the ID, rows in ID order", () => {
    const byId = [...evals].sort((x, y) => compareCodePoints(x.ID, y.ID));
    const { items, pages } = pageAll(byId, { perPage: 7, tokenizer: idTokenizer });
    expect(items).toEqual(byId);
    expectPaged(pages, 7);
    const first = paginate(byId, { perPage: 2, tokenizer: idTokenizer });
    expect(first.nextToken).toBe((byId[2] as Eval).ID);
    // A prefix-style token between IDs.
    const mid = paginate(byId, { perPage: 1, nextToken: "8", tokenizer: idTokenizer });
    expect(mid.items[0]).toBe(byId.find((e) => e.ID >= "8"));
  });

  it("Namespace.ID: compound order, where namespace a sorts before a-b", () => {
    const byNs = [...evals].sort(
      (x, y) => compareCodePoints(x.Namespace, y.Namespace) || compareCodePoints(x.ID, y.ID),
    );
    expect((byNs[0] as Eval).Namespace).toBe("a");
    for (const reverse of [false, true]) {
      const rows = reverse ? [...byNs].reverse() : byNs;
      const { items, pages } = pageAll(rows, { perPage: 7, reverse, tokenizer: namespaceIdTokenizer });
      expect(items).toEqual(rows);
      expectPaged(pages, 7);
    }
    const page = paginate(byNs, { perPage: 1, nextToken: "a-b", tokenizer: namespaceIdTokenizer });
    expect(page.items[0]).toBe(byNs.find((e) => e.Namespace === "a-b"));
    expect(page.nextToken).toMatch(/^a-b\./);
  });

  it("orders strings by code point, like go-memdb's byte-ordered indexes", () => {
    expect(compareCodePoints("\uffff", "😀")).toBeLessThan(0);
    expect("\uffff" < "😀").toBe(false);
    expect(compareCodePoints("a", "a-b")).toBeLessThan(0);
    expect(compareCodePoints("abc", "abc")).toBe(0);
  });
});

describe("parseListQuery", () => {
  it("reads Nomad's parameters", () => {
    const q = parseListQuery({
      per_page: "25",
      next_token: "54.5456bd7a-9fc0-c0dd-6131-cbee77f57577",
      reverse: "true",
      filter: 'Status == "pending"',
    });
    expect(q.perPage).toBe(25);
    expect(q.nextToken).toBe("54.5456bd7a-9fc0-c0dd-6131-cbee77f57577");
    expect(q.reverse).toBe(true);
    expect(q.filter?.expression).toBe('Status == "pending"');
  });

  it("defaults to everything, from the start, forward, unfiltered", () => {
    expect(parseListQuery({})).toEqual({ perPage: 0, nextToken: "", reverse: false, filter: undefined });
    expect(parseListQuery({ per_page: "", filter: "", reverse: "" })).toEqual({
      perPage: 0,
      nextToken: "",
      reverse: false,
      filter: undefined,
    });
  });

  it("takes the first of repeated parameters and accepts pre-coerced numbers", () => {
    expect(parseListQuery({ per_page: ["3", "9"], reverse: ["false", "true"] })).toMatchObject({
      perPage: 3,
      reverse: false,
    });
    expect(parseListQuery({ per_page: 4 }).perPage).toBe(4);
  });

  it.each([
    [{ per_page: "abc" }, /^per_page must be a non-negative integer/],
    [{ per_page: "-1" }, /^per_page must be a non-negative integer/],
    [{ per_page: "1.5" }, /^per_page must be a non-negative integer/],
    [{ per_page: "2147483648" }, /^per_page must be a non-negative integer no greater than 2147483647/],
    [
      { reverse: "yes" },
      /^Failed to parse value of "reverse" \(yes\) as a bool: strconv.ParseBool: parsing "yes": invalid syntax$/,
    ],
    [{ next_token: { a: 1 } }, /^next_token must be a single string value$/],
    [
      { filter: 'Status = "pending"' },
      /^failed to create result paginator: failed to read filter expression: 1:8 \(7\): no match found, expected: /,
    ],
    [
      { filter: "JobID matches `(`" },
      /^failed to create result paginator: failed to read filter expression: Failed to compile regular expression/,
    ],
  ])("rejects %j", (query, message) => {
    let caught: unknown;
    try {
      parseListQuery(query);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(QueryError);
    expect((caught as QueryError).status).toBe(400);
    expect((caught as QueryError).message).toMatch(message);
  });
});
