import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileFilter, type Filter, FilterError } from "../../src/query/filter/index.ts";

/**
 * Hardening: whatever a client puts in `?filter=`, compiling it either gives a
 * Filter or throws FilterError (a 400), and evaluating a compiled filter on
 * any JSON-shaped row gives a boolean or throws FilterError. Any other error
 * would surface as a 500.
 */

/** numRuns, multiplied by PROPERTY_RUNS_SCALE for a longer soak run (the default stays quick). */
const runs = (n: number) => ({ numRuns: n * Math.max(1, Number(process.env.PROPERTY_RUNS_SCALE) || 1) });
const RUNS = runs(400);

/** The outcome of compiling, with anything but FilterError rethrown (so fast-check reports input and stack). */
function compileOrFilterError(expression: string): Filter | FilterError {
  try {
    return compileFilter(expression);
  } catch (err) {
    if (err instanceof FilterError) return err;
    throw err;
  }
}

function matchOrFilterError(filter: Filter, row: unknown): boolean | FilterError {
  try {
    const result = filter.matches(row);
    expect(typeof result).toBe("boolean");
    return result;
  } catch (err) {
    if (err instanceof FilterError) return err;
    throw err;
  }
}

// ---- vocabulary shared by expressions and rows ----

const KEYWORDS = new Set(["and", "or", "not", "in", "is", "empty", "contains", "matches"]);
const FIELDS = ["Status", "ID", "Meta", "Tags", "Count", "Ratio", "Ok", "Nil", "a", "b", "a_1", "x/y"];
const KEYS = [...FIELDS, "0", "1", "key", "cpu.numcores", "", "~", "/"];

/** Arbitrary UTF-16 text, lone surrogates included. */
const utf16 = fc
  .array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 12 })
  .map((units) => String.fromCharCode(...units));

const shortText = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.string({ unit: "binary", maxLength: 6 }),
  utf16,
  fc.constantFrom(...KEYS),
);

const identifier = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...FIELDS) },
  {
    weight: 1,
    arbitrary: fc
      .stringMatching(/^[a-zA-Z][a-zA-Z0-9_/]{0,6}$/)
      // Keywords make a valid-looking expression ambiguous; nearValid has them.
      .filter((s) => !KEYWORDS.has(s)),
  },
);

/** Go string literal bodies, with escapes valid and not. */
const goEscape = fc.constantFrom(
  "\\n",
  "\\t",
  "\\\\",
  '\\"',
  "\\x41",
  "\\u00e9",
  "\\U0001F600",
  "\\101",
  "\\q",
  "\\x",
  "\\u12",
  "\\U00110000",
  "\\uD800",
  "\\",
);
const stringBody = fc
  .array(fc.oneof(fc.string({ maxLength: 4 }), goEscape, fc.constantFrom("é", "😀", "\n", "`", '"')), {
    maxLength: 4,
  })
  .map((parts) => parts.join(""));
const stringLiteral = fc.oneof(
  stringBody.map((s) => `"${s.replaceAll('"', "")}"`),
  stringBody.map((s) => `\`${s.replaceAll("`", "")}\``),
  stringBody.map((s) => `"${s}`),
);
/**
 * Literals the grammar reads whole and Go's strconv.Unquote accepts. bexpr's
 * grammar ends a string at the first quote character, escaped or not, so the
 * quote itself never appears inside.
 */
const quoted = (s: string) => JSON.stringify(s.replaceAll('"', ""));
const validString = fc.oneof(
  fc.string({ maxLength: 8 }).map(quoted),
  fc.string({ unit: "binary", maxLength: 6 }).map(quoted),
  fc.string({ maxLength: 8 }).map((s) => `\`${s.replaceAll("`", "")}\``),
);

/** Numbers the grammar accepts: `-`? (0 | [1-9][0-9]*) (. [0-9]+)?. */
const validNumber = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }).map(String),
  fc.tuple(fc.integer({ min: -99, max: 99 }), fc.nat(999)).map(([i, f]) => `${i}.${f}`),
  fc.constantFrom("0", "-0", "9007199254740993", "18446744073709551616", "0.0"),
);
/** Numbers it refuses, or reads differently from JavaScript. */
const number = fc.oneof(
  validNumber,
  fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
  fc.constantFrom("01", "0x1f", "0o17", "0b101", "1_000", "1e400", ".5", "1.", "--1", "1.2.3"),
);

const selector = fc.oneof(
  { weight: 4, arbitrary: fc.array(identifier, { minLength: 1, maxLength: 3 }).map((p) => p.join(".")) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(identifier, fc.array(fc.oneof(validString, fc.constantFrom('"key"', '"0"')), { maxLength: 2 }))
      .map(([head, keys]) => head + keys.map((k) => `[${k}]`).join("")),
  },
  { weight: 1, arbitrary: fc.tuple(identifier, fc.nat(3)).map(([head, i]) => `${head}.${i}`) },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.oneof(fc.stringMatching(/^[a-zA-Z0-9_.~:|-]{1,5}$/), fc.constantFrom("0", "~0", "~1", "é")), {
        minLength: 1,
        maxLength: 3,
      })
      .map((p) => `"/${p.join("/")}"`),
  },
);

/** A regexp pattern from RE2-ish pieces (kept short: today's engine backtracks). */
const pattern = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        "a",
        ".",
        "^",
        "$",
        "\\d",
        "\\w",
        "\\s",
        "[a-z]",
        "[^0-9]",
        "[[:alpha:]]",
        "(?i)",
        "(?s)",
        "(?m)",
        "(?U)",
        "(a|b)",
        "(?P<n>x)",
        "\\pL",
        "\\p{Greek}",
        "\\Q.*\\E",
        "\\x{41}",
        "*",
        "+",
        "?",
        "{2}",
        "{1,3}",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "\\",
        "\\b",
        "\\z",
        "é",
      ),
      fc.string({ maxLength: 2 }),
    ),
    { maxLength: 6 },
  )
  .map((parts) => parts.join(""));

const value = fc.oneof(
  { weight: 3, arbitrary: validString },
  { weight: 2, arbitrary: validNumber },
  { weight: 2, arbitrary: identifier },
  { weight: 1, arbitrary: fc.constantFrom("true", "false", "T", "0", '"/a/b"') },
);

/** A clause that the grammar accepts (values may still fail to coerce at evaluation time). */
const matchClause = fc.oneof(
  fc.tuple(selector, fc.constantFrom("==", "!=", " == ", " != "), value).map(([s, op, v]) => `${s}${op}${v}`),
  fc
    .tuple(selector, fc.constantFrom("contains", "not contains"), value)
    .map(([s, op, v]) => `${s} ${op} ${v}`),
  fc.tuple(value, fc.constantFrom("in", "not in"), selector).map(([v, op, s]) => `${v} ${op} ${s}`),
  fc.tuple(selector, fc.constantFrom("is empty", "is not empty")).map(([s, op]) => `${s} ${op}`),
  fc
    .tuple(selector, fc.constantFrom("matches", "not matches"), pattern)
    .map(([s, op, p]) => `${s} ${op} ${quoted(p)}`),
);

/** Expressions the grammar accepts: clauses joined by and/or, negated, parenthesised. */
const { validExpression } = fc.letrec<{ validExpression: string }>((tie) => ({
  validExpression: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    matchClause,
    fc
      .tuple(tie("validExpression"), fc.constantFrom("and", "or"), tie("validExpression"))
      .map(([l, op, r]) => `${l} ${op} ${r}`),
    tie("validExpression").map((e) => `not ${e}`),
    tie("validExpression").map((e) => `(${e})`),
    tie("validExpression").map((e) => ` ( ${e} ) `),
  ),
}));

/** Near-valid: grammar tokens in arbitrary order, with arbitrary spacing and junk. */
const token = fc.oneof(
  { weight: 3, arbitrary: selector },
  { weight: 3, arbitrary: value },
  { weight: 2, arbitrary: fc.oneof(stringLiteral, number, identifier) },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      "==",
      "!=",
      "=",
      "!",
      "contains",
      "not",
      "matches",
      "in",
      "is",
      "empty",
      "and",
      "or",
      "(",
      ")",
      "[",
      "]",
      ".",
      '"',
      "`",
      "-",
      "/",
      "\\",
    ),
  },
  { weight: 1, arbitrary: shortText },
);
const nearValid = fc
  .array(fc.tuple(token, fc.constantFrom("", " ", "  ", "\t", "\n", "\r\n")), { maxLength: 12 })
  .map((parts) => parts.map(([t, sep]) => t + sep).join(""));

/** Mutations of valid expressions: a character removed, duplicated or replaced. */
const mutated = fc
  .tuple(validExpression, fc.nat(), fc.constantFrom("delete", "duplicate", "replace", "truncate"), shortText)
  .map(([e, at, how, text]) => {
    const i = e.length === 0 ? 0 : at % e.length;
    switch (how) {
      case "delete":
        return e.slice(0, i) + e.slice(i + 1);
      case "duplicate":
        return e.slice(0, i + 1) + e.slice(i);
      case "replace":
        return e.slice(0, i) + text + e.slice(i + 1);
      default:
        return e.slice(0, i);
    }
  });

const anyExpression = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  utf16,
  nearValid,
  mutated,
  validExpression,
);

// ---- rows ----

const { row } = fc.letrec<{ row: Record<string, unknown>; json: unknown }>((tie) => ({
  json: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom(null, true, false, 0, -1, 1.5, "", "a", "é", 2 ** 53 + 2, -0, 1e300),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    shortText,
    fc.array(tie("json"), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie("json"), { maxKeys: 4 }),
  ),
  row: fc.dictionary(fc.constantFrom(...KEYS), tie("json"), { maxKeys: 6 }),
}));

/** Anything a handler might pass: rows, and a few things that are not objects at all. */
const anyRow = fc.oneof(
  { weight: 5, arbitrary: row },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(undefined, null, 0, "", [], {}) },
);

describe("filter: arbitrary input never crashes the parser or evaluator", () => {
  it("compileFilter on arbitrary strings returns a Filter or throws FilterError", () => {
    fc.assert(
      fc.property(anyExpression, (expression) => {
        const out = compileOrFilterError(expression);
        if (out instanceof FilterError) {
          expect(out.message.startsWith("filter: ")).toBe(true);
          expect(["syntax", "regexp"]).toContain(out.kind);
          expect(Number.isInteger(out.position.offset) && out.position.offset >= 0).toBe(true);
        } else {
          expect(out.expression).toBe(expression);
        }
      }),
      runs(1500),
    );
  });

  it("generated grammar-valid expressions compile (only a `matches` pattern may be refused)", () => {
    fc.assert(
      fc.property(validExpression, (expression) => {
        const out = compileOrFilterError(expression);
        if (out instanceof FilterError) {
          // The grammar accepted it; the only up-front refusals left are bad
          // regexps, and string escapes Go's strconv.Unquote rejects.
          const badEscape = out.kind === "syntax" && /rule "string": invalid syntax/.test(out.detail);
          if (out.kind !== "regexp" && !badEscape) {
            throw new Error(`valid expression refused: ${JSON.stringify(expression)}: ${out.message}`);
          }
        }
      }),
      RUNS,
    );
  });

  it("clauses built only from plain pieces always compile", () => {
    const plainValue = fc.oneof(
      fc.integer({ min: -1000, max: 1000 }).map(String),
      fc.string({ unit: "grapheme-ascii", maxLength: 8 }).map(quoted),
      identifier,
    );
    const plainClause = fc.oneof(
      fc
        .tuple(selector, fc.constantFrom("==", "!=", "contains", "not contains"), plainValue)
        .map(([s, op, v]) => `${s} ${op} ${v}`),
      fc.tuple(plainValue, fc.constantFrom("in", "not in"), selector).map(([v, op, s]) => `${v} ${op} ${s}`),
      fc.tuple(selector, fc.constantFrom("is empty", "is not empty")).map(([s, op]) => `${s} ${op}`),
    );
    const plainExpression = fc
      .array(fc.tuple(fc.boolean(), plainClause, fc.constantFrom("and", "or")), {
        minLength: 1,
        maxLength: 4,
      })
      .map((parts) =>
        parts
          .map(([negate, clause], i) => {
            const joiner = i === 0 ? "" : ` ${(parts[i - 1] as [boolean, string, string])[2]} `;
            return `${joiner}${negate ? "not " : ""}(${clause})`;
          })
          .join(""),
      );
    fc.assert(
      fc.property(plainExpression, (expression) => {
        // Throws (and fails the property) on any error at all.
        const filter = compileFilter(expression);
        expect(filter.expression).toBe(expression);
      }),
      RUNS,
    );
  });

  it("a compiled filter's matches() on arbitrary rows returns a boolean or throws FilterError", () => {
    fc.assert(
      fc.property(
        fc.oneof(validExpression, mutated, nearValid),
        fc.array(anyRow, { maxLength: 5 }),
        (expression, rows) => {
          const filter = compileOrFilterError(expression);
          if (filter instanceof FilterError) return;
          for (const r of rows) {
            const out = matchOrFilterError(filter, r);
            if (out instanceof FilterError) expect(out.kind).toBe("evaluation");
          }
        },
      ),
      runs(800),
    );
  });

  it("evaluation is deterministic: the same row gives the same answer twice", () => {
    fc.assert(
      fc.property(validExpression, row, (expression, r) => {
        const filter = compileOrFilterError(expression);
        if (filter instanceof FilterError) return;
        const first = matchOrFilterError(filter, r);
        const second = matchOrFilterError(filter, r);
        if (first instanceof FilterError) expect(second).toBeInstanceOf(FilterError);
        else expect(second).toBe(first);
      }),
      RUNS,
    );
  });

  it("`not` negates: `not (e)` is the opposite of `e` wherever `e` evaluates", () => {
    fc.assert(
      fc.property(validExpression, row, (expression, r) => {
        const filter = compileOrFilterError(expression);
        if (filter instanceof FilterError) return;
        const negated = compileFilter(`not (${expression})`);
        const a = matchOrFilterError(filter, r);
        const b = matchOrFilterError(negated, r);
        if (typeof a === "boolean") expect(b).toBe(!a);
      }),
      RUNS,
    );
  });

  it("long and deeply nested expressions compile or throw FilterError, never overflow the stack", () => {
    const clause = fc.constantFrom("a==1", "a is empty", '"x" in a', "(a==1)", "not a==1");
    const shape = fc.record({
      depth: fc.nat(1200),
      joiner: fc.constantFrom(" and ", " or "),
      wrapper: fc.constantFrom("paren", "not", "none"),
      clauses: fc.integer({ min: 1, max: 1200 }),
      clause,
    });
    fc.assert(
      fc.property(shape, ({ depth, joiner, wrapper, clauses, clause: c }) => {
        let expression = Array.from({ length: clauses }, () => c).join(joiner);
        if (wrapper === "paren") expression = `${"(".repeat(depth)}${expression}${")".repeat(depth)}`;
        if (wrapper === "not") expression = `${"not ".repeat(depth)}${expression}`;
        const out = compileOrFilterError(expression);
        if (!(out instanceof FilterError)) matchOrFilterError(out, { a: 1 });
      }),
      runs(60),
    );
  });

  // Before the 16 KiB length cap, `and` chains were not counted against the
  // nesting limit and ~3,200 clauses ("a==1 and ".repeat(3193) + "a==1")
  // overflowed the stack in Parser.and -> not -> paren -> match (RangeError).
  it("chains of and/or clauses up to and past the length cap compile or throw FilterError", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20_000 }),
        fc.constantFrom(" and ", " or "),
        fc.constantFrom("a==1", "a", "(a==1)"),
        (n, joiner, c) => {
          const out = compileOrFilterError(Array.from({ length: n }, () => c).join(joiner));
          if (!(out instanceof FilterError)) matchOrFilterError(out, { a: 1 });
        },
      ),
      runs(40),
    );
    for (const joiner of [" and ", " or "]) {
      const longest = `a==1${joiner}`.repeat(Math.floor(16_380 / (4 + joiner.length)));
      expect(compileOrFilterError(`${longest}a==1`)).not.toBeInstanceOf(Error);
    }
  });
});
