import { describe, expect, it } from "vitest";
import { compileFilter, FilterError } from "../../src/query/filter/index.ts";
import { MAX_FILTER_DEPTH, MAX_FILTER_LENGTH } from "../../src/query/filter/parser.ts";

function syntaxError(expression: string): FilterError {
  try {
    compileFilter(expression);
  } catch (err) {
    // A RangeError (stack overflow) here would be the bug these tests guard against.
    expect(err).toBeInstanceOf(FilterError);
    expect((err as FilterError).kind).toBe("syntax");
    return err as FilterError;
  }
  throw new Error(`expected ${expression.slice(0, 40)}… to be refused`);
}

const row = { Status: "pending", Priority: 50 };

describe("filter length", () => {
  it("refuses a 1 MB filter up front with a clear message", () => {
    const huge = `Status == "${"x".repeat(1024 * 1024)}"`;
    const err = syntaxError(huge);
    expect(err.message).toBe(
      `filter: 1:16385 (16384): filter expression is ${huge.length} characters long; the limit is 16384`,
    );
  });

  it("accepts a filter of exactly the limit", () => {
    const head = 'Status == "';
    const expr = `${head}${"x".repeat(MAX_FILTER_LENGTH - head.length - 1)}"`;
    expect(expr.length).toBe(MAX_FILTER_LENGTH);
    expect(compileFilter(expr).matches(row)).toBe(false);
    expect(() => compileFilter(`${expr} `)).toThrowError(/the limit is 16384/);
  });
});

describe("filter nesting", () => {
  it.each([
    ["parentheses", `${"(".repeat(100_000)}Status == pending${")".repeat(100_000)}`],
    ["unclosed parentheses", "(".repeat(100_000)],
    ["not", `${"not ".repeat(100_000)}Status == pending`],
    ["not and parentheses", `${"not (".repeat(50_000)}Status == pending${")".repeat(50_000)}`],
  ])("refuses 100,000-deep %s with a clear error (no stack overflow)", (_name, deep) => {
    // The length cap would answer first; this checks the depth bound on its own.
    const err = syntaxError(deep.slice(0, MAX_FILTER_LENGTH));
    expect(err.detail).toMatch(
      /^1:\d+ \(\d+\): expression nests parentheses and "not" deeper than 64 levels$/,
    );
    expect(syntaxError(deep).detail).toMatch(/the limit is 16384/);
  });

  it(`accepts ${MAX_FILTER_DEPTH} levels and refuses one more`, () => {
    const at = (n: number) => `${"(".repeat(n)}Status == pending${")".repeat(n)}`;
    expect(compileFilter(at(MAX_FILTER_DEPTH)).matches(row)).toBe(true);
    expect(syntaxError(at(MAX_FILTER_DEPTH + 1)).detail).toMatch(/deeper than 64 levels/);
    const nots = (n: number) => `${"not ".repeat(n)}Status == pending`;
    expect(compileFilter(nots(MAX_FILTER_DEPTH)).matches(row)).toBe(true);
    expect(syntaxError(nots(MAX_FILTER_DEPTH + 1)).detail).toMatch(/deeper than 64 levels/);
  });
});

describe("long chains of clauses take no stack", () => {
  // As many clauses as fit in the length limit (~1,800), which a recursive parser or evaluator would nest.
  const chain = (clause: string, word: string) => {
    const n = Math.floor(MAX_FILTER_LENGTH / (clause.length + word.length + 2));
    return Array.from({ length: n }, () => clause).join(` ${word} `);
  };

  it("and: every clause is checked", () => {
    expect(compileFilter(chain("Priority == 50", "and")).matches(row)).toBe(true);
    const lastFails = `${chain("Priority == 50", "and").slice(0, -2)}51`;
    expect(compileFilter(lastFails).matches(row)).toBe(false);
  });

  it("or: any clause decides", () => {
    expect(compileFilter(chain("Priority == 49", "or")).matches(row)).toBe(false);
    const lastMatches = `${chain("Priority == 49", "or").slice(0, -2)}50`;
    expect(compileFilter(lastMatches).matches(row)).toBe(true);
  });

  it("mixed, with precedence: and binds tighter than or", () => {
    const expr = Array.from({ length: 600 }, (_, i) => `Priority == ${i} and Status == pending`).join(" or ");
    expect(expr.length).toBeLessThan(MAX_FILTER_LENGTH * 2);
    const short = expr.slice(0, expr.lastIndexOf(" or ", MAX_FILTER_LENGTH));
    expect(compileFilter(short).matches(row)).toBe(true);
    expect(compileFilter(short).matches({ ...row, Status: "blocked" })).toBe(false);
  });

  it("an evaluation error in the last clause still reports that clause's position", () => {
    const expr = `${chain("Priority == 50", "and")} and Stauts == x`.slice(-MAX_FILTER_LENGTH);
    const start = expr.indexOf("P");
    const f = compileFilter(expr.slice(start));
    expect(() => f.matches(row)).toThrowError(/couldn't find struct field with name "Stauts"/);
  });
});
