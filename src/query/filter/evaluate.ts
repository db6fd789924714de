import type { Expression, MatchExpression, Selector } from "./ast.ts";
import { selectorText } from "./ast.ts";
import { FilterError, positionAt } from "./filter-error.ts";
import type { GoRegexp } from "./go-regexp.ts";
import { compileGoRegexp, GoRegexpError } from "./go-regexp.ts";
import { parseGoBool, parseGoFloat, parseGoInt } from "./go-strconv.ts";

/**
 * Turns the AST into nested closures once per request, so evaluating a row is
 * only property reads and comparisons: selector paths are pre-split (array
 * indexes pre-parsed), the value is pre-coerced to every kind it may be
 * compared with, and regexes are compiled (Go's RE2, linear time).
 *
 * Semantics follow go-bexpr v0.1.12 evaluate.go as Nomad 1.5 calls it
 * (CreateEvaluator(expr).Evaluate(*structs.X)), mapped onto JSON-shaped rows:
 * - The row itself stands for the Go struct: an unknown top-level field is an
 *   error ("couldn't find struct field"), exactly as Nomad reports typos.
 * - A missing key in any nested object is treated as a missing *map* key:
 *   the operator's not-present disposition applies (== false, != true,
 *   in false, not in true, is empty true, is not empty false, matches false,
 *   not matches true). Only the last path part may be missing; a missing
 *   intermediate part is an error, as in bexpr (evaluateNotPresent).
 * - `null` on the path behaves like a nil map (its keys are missing); as a
 *   compared value it behaves like a nil map/slice: empty, contains nothing,
 *   and not comparable with == or matches.
 */

export type Predicate = (datum: unknown) => boolean;

/** What a selector resolves to when bexpr would apply the operator's not-present disposition. */
const MISSING: unique symbol = Symbol("missing");

const NO_MATCH = 0;
const MATCH = 1;
const BAD_VALUE = 2;
const NOT_PRIMITIVE = 3;
type Comparison = typeof NO_MATCH | typeof MATCH | typeof BAD_VALUE | typeof NOT_PRIMITIVE;

const hasOwn = Object.hasOwn;

export function compileExpression(expr: Expression, source: string): Predicate {
  switch (expr.kind) {
    case "and":
    case "or":
      return compileChain(expr.kind, expr, source);
    case "not": {
      const operand = compileExpression(expr.operand, source);
      return (datum) => !operand(datum);
    }
    case "match":
      return compileMatch(expr, source);
  }
}

/**
 * `a and b and c …` parses right-nested, one level per clause. Compiling that
 * as nested closures would recurse once per clause, here and again on every
 * row, so a long chain is flattened into one loop: recursion is left only
 * for parentheses and `not`, whose depth the parser bounds.
 */
function compileChain(kind: "and" | "or", expr: Expression, source: string): Predicate {
  const operands: Predicate[] = [];
  let cur = expr;
  while (cur.kind === kind) {
    operands.push(compileExpression(cur.left, source));
    cur = cur.right;
  }
  operands.push(compileExpression(cur, source));
  const [a, b, c] = operands as [Predicate, Predicate, Predicate | undefined];
  // Short chains, the usual case, keep straight-line closures.
  if (operands.length === 2) return kind === "and" ? (d) => a(d) && b(d) : (d) => a(d) || b(d);
  if (operands.length === 3 && c !== undefined) {
    return kind === "and" ? (d) => a(d) && b(d) && c(d) : (d) => a(d) || b(d) || c(d);
  }
  const n = operands.length;
  if (kind === "and") {
    return (d) => {
      for (let i = 0; i < n; i++) if (!(operands[i] as Predicate)(d)) return false;
      return true;
    };
  }
  return (d) => {
    for (let i = 0; i < n; i++) if ((operands[i] as Predicate)(d)) return true;
    return false;
  };
}

function compileMatch(expr: MatchExpression, source: string): Predicate {
  // Positions are computed only on failure: positionAt is linear in the
  // source, and doing it per clause up front would be quadratic.
  const fail = (detail: string): never => {
    throw new FilterError("evaluation", detail, positionAt(source, expr.index));
  };
  const resolve = compileSelector(expr.selector, fail);
  const raw = expr.value ?? "";
  const selectorName = JSON.stringify(selectorText(expr.selector));

  switch (expr.operator) {
    case "equal":
    case "notEqual": {
      const compare = compileComparison(raw);
      const equal = (v: unknown): boolean => {
        const r = compare(v);
        if (r === MATCH) return true;
        if (r === NO_MATCH) return false;
        return r === BAD_VALUE
          ? fail(`error getting match value in expression: ${coercionError(raw, v)}`)
          : fail("unable to find suitable primitive comparison function for matching");
      };
      if (expr.operator === "equal") {
        return (datum) => {
          const v = resolve(datum);
          return v === MISSING ? false : equal(v);
        };
      }
      return (datum) => {
        const v = resolve(datum);
        return v === MISSING ? true : !equal(v);
      };
    }
    case "in":
    case "notIn": {
      const contains = compileContains(raw, selectorName, fail);
      if (expr.operator === "in") {
        return (datum) => {
          const v = resolve(datum);
          return v === MISSING ? false : contains(v);
        };
      }
      return (datum) => {
        const v = resolve(datum);
        return v === MISSING ? true : !contains(v);
      };
    }
    case "isEmpty":
    case "isNotEmpty": {
      const empty = (v: unknown): boolean => {
        if (typeof v === "string" || Array.isArray(v)) return v.length === 0;
        if (v === null) return true;
        if (typeof v === "object") return isEmptyObject(v);
        return fail(`cannot take the length of a value of type ${goKind(v)} for selector: ${selectorName}`);
      };
      if (expr.operator === "isEmpty") {
        return (datum) => {
          const v = resolve(datum);
          return v === MISSING ? true : empty(v);
        };
      }
      return (datum) => {
        const v = resolve(datum);
        return v === MISSING ? false : !empty(v);
      };
    }
    case "matches":
    case "notMatches": {
      const re = compileRegExp(raw, source, expr.valueIndex ?? expr.index);
      const test = (v: unknown): boolean =>
        typeof v === "string" ? re.test(v) : fail(`Value of type ${goType(v)} is not convertible to []byte`);
      if (expr.operator === "matches") {
        return (datum) => {
          const v = resolve(datum);
          return v === MISSING ? false : test(v);
        };
      }
      return (datum) => {
        const v = resolve(datum);
        return v === MISSING ? true : !test(v);
      };
    }
  }
}

/**
 * Walks the path the way mitchellh/pointerstructure does for bexpr: objects
 * by own key, arrays by integer index, anything else is a dead end. Returns
 * MISSING only where bexpr would apply the not-present disposition.
 */
function compileSelector(selector: Selector, fail: (detail: string) => never): (datum: unknown) => unknown {
  const parts = selector.path;
  const last = parts.length - 1;
  const indexes = parts.map((part) => {
    const parsed = parseGoInt(part);
    return parsed.ok ? Number(parsed.value) : undefined;
  });
  const pointer = `/${parts.map((p) => p.replaceAll("~", "~0").replaceAll("/", "~1")).join("/")}`;
  const lookupFailed = (i: number, cur: unknown): never => {
    const part = parts[i] as string;
    const prefix = `error finding value in datum: ${pointer} at part ${i}: `;
    if (Array.isArray(cur)) {
      const index = indexes[i];
      return index === undefined
        ? fail(`${prefix}couldn't convert key ${JSON.stringify(part)} to an index`)
        : fail(`${prefix}index ${index} is out of range (length = ${cur.length})`);
    }
    if (cur !== null && typeof cur !== "object") return fail(`${prefix}invalid value kind: ${goKind(cur)}`);
    return i === 0
      ? fail(`${prefix}couldn't find struct field with name ${JSON.stringify(part)}`)
      : fail(`${prefix}couldn't find key ${JSON.stringify(part)}`);
  };

  if (parts.length === 1) {
    // The common case (`Status == "pending"`), kept free of the loop.
    const key = parts[0] as string;
    return (datum) => {
      if (datum !== null && typeof datum === "object" && hasOwn(datum, key)) {
        const v = (datum as Record<string, unknown>)[key];
        if (v !== undefined) return v;
      }
      return lookupFailed(0, datum);
    };
  }

  return (datum) => {
    let cur: unknown = datum;
    for (let i = 0; i <= last; i++) {
      if (cur !== null && typeof cur === "object") {
        if (Array.isArray(cur)) {
          const index = indexes[i];
          if (index !== undefined && index >= 0 && index < cur.length) {
            cur = cur[index];
            continue;
          }
          return lookupFailed(i, cur);
        }
        const part = parts[i] as string;
        if (hasOwn(cur, part)) {
          const v = (cur as Record<string, unknown>)[part];
          if (v !== undefined) {
            cur = v;
            continue;
          }
        }
      } else if (cur !== null || i === 0) {
        return lookupFailed(i, cur);
      }
      // A missing key, or a key of a nil map: only the leaf may be absent.
      if (i === last && i > 0) return MISSING;
      return lookupFailed(i, cur);
    }
    return cur;
  };
}

/**
 * bexpr compares after coercing the raw value to the field's Go kind. JSON
 * numbers do not say whether the field was an int or a float, so an integral
 * number is compared as Go's int (ParseInt, base 0) and, if the value does not
 * parse as an int, as a float; a fractional number as a float.
 */
function compileComparison(raw: string): (v: unknown) => Comparison {
  const asBool = parseGoBool(raw);
  const asInt = parseGoInt(raw);
  const asFloat = parseGoFloat(raw);
  const intNumber = asInt.ok ? Number(asInt.value) : Number.NaN;
  const intIsExact = Number.isSafeInteger(intNumber);
  return (v) => {
    switch (typeof v) {
      case "string":
        return v === raw ? MATCH : NO_MATCH;
      case "number":
        if (Number.isInteger(v) && asInt.ok) {
          const equal = intIsExact ? v === intNumber : BigInt(v) === asInt.value;
          return equal ? MATCH : NO_MATCH;
        }
        if (!asFloat.ok) return BAD_VALUE;
        return v === asFloat.value ? MATCH : NO_MATCH;
      case "boolean":
        if (!asBool.ok) return BAD_VALUE;
        return v === asBool.value ? MATCH : NO_MATCH;
      case "bigint":
        if (!asInt.ok) return BAD_VALUE;
        return v === asInt.value ? MATCH : NO_MATCH;
      default:
        return NOT_PRIMITIVE;
    }
  };
}

function coercionError(raw: string, v: unknown): string {
  if (typeof v === "boolean") {
    const r = parseGoBool(raw);
    return r.ok ? "" : r.error;
  }
  if (typeof v === "number" && !Number.isInteger(v)) {
    const r = parseGoFloat(raw);
    return r.ok ? "" : r.error;
  }
  const r = parseGoInt(raw);
  return r.ok ? "" : r.error;
}

/**
 * `in` / `contains`: object → key present (a Go map), array → some element
 * equal after coercion, string → substring. For arrays, an element the value
 * cannot be coerced to is an error when all elements share a kind (a typed Go
 * slice) and is skipped when kinds are mixed (a []interface{}), as bexpr does.
 */
function compileContains(
  raw: string,
  selectorName: string,
  fail: (detail: string) => never,
): (v: unknown) => boolean {
  const compare = compileComparison(raw);
  return (v) => {
    if (typeof v === "string") return v.includes(raw);
    if (Array.isArray(v)) {
      for (const element of v) {
        const r = compare(element);
        if (r === MATCH) return true;
        if (r === NO_MATCH) continue;
        if (r === NOT_PRIMITIVE) {
          return fail('unable to find suitable primitive comparison function for "in" comparison');
        }
        if (isUniformlyTyped(v)) {
          return fail(`error getting match value in expression: ${coercionError(raw, element)}`);
        }
      }
      return false;
    }
    if (v === null) return false;
    if (typeof v === "object") return hasOwn(v, raw);
    return fail(`Cannot perform in/contains operations on type ${goKind(v)} for selector: ${selectorName}`);
  };
}

function isUniformlyTyped(values: readonly unknown[]): boolean {
  const first = values[0];
  const kind = typeof first === "number" ? goKind(first) : typeof first;
  return values.every((v) => (typeof v === "number" ? goKind(v) : typeof v) === kind);
}

function compileRegExp(pattern: string, source: string, index: number): GoRegexp {
  try {
    return compileGoRegexp(pattern);
  } catch (err) {
    if (!(err instanceof GoRegexpError)) throw err;
    throw new FilterError(
      "regexp",
      `Failed to compile regular expression ${JSON.stringify(pattern)}: ${err.reason}`,
      positionAt(source, index),
    );
  }
}

function isEmptyObject(v: object): boolean {
  for (const key in v) {
    if (hasOwn(v, key)) return false;
  }
  return true;
}

/** The Go reflect.Kind name a JSON value would most likely have had. */
function goKind(v: unknown): string {
  switch (typeof v) {
    case "number":
      return Number.isInteger(v) ? "int" : "float64";
    case "boolean":
      return "bool";
    case "bigint":
      return "int64";
    case "string":
      return "string";
    default:
      if (v === null || v === undefined) return "invalid";
      return Array.isArray(v) ? "slice" : "map";
  }
}

function goType(v: unknown): string {
  if (Array.isArray(v)) return "[]interface {}";
  if (v !== null && typeof v === "object") return "map[string]interface {}";
  return v === null || v === undefined ? "<nil>" : goKind(v);
}
