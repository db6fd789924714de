/** The parsed form of a filter, shaped like go-bexpr's grammar/ast.go. */
export type Expression = BinaryExpression | NotExpression | MatchExpression;

export interface BinaryExpression {
  readonly kind: "and" | "or";
  readonly left: Expression;
  readonly right: Expression;
}

export interface NotExpression {
  readonly kind: "not";
  readonly operand: Expression;
}

/**
 * `contains` / `not contains` parse to the same operators as `in` / `not in`,
 * as in bexpr: they differ only in which side the selector is written on.
 */
export type MatchOperator =
  | "equal"
  | "notEqual"
  | "in"
  | "notIn"
  | "isEmpty"
  | "isNotEmpty"
  | "matches"
  | "notMatches";

export interface Selector {
  /** `bexpr` for `a.b["c"]`, `jsonPointer` for `"/a/b"`; it changes only how the selector prints. */
  readonly type: "bexpr" | "jsonPointer";
  readonly path: readonly string[];
  /** UTF-16 index of the selector in the expression, for error positions. */
  readonly index: number;
}

export interface MatchExpression {
  readonly kind: "match";
  readonly operator: MatchOperator;
  readonly selector: Selector;
  /** The value's raw text after unquoting; absent for `is empty` / `is not empty`. */
  readonly value?: string;
  /** UTF-16 index of the value in the expression. */
  readonly valueIndex?: number;
  /** UTF-16 index where the whole clause starts. */
  readonly index: number;
}

/** bexpr's Selector.String(): dotted for bexpr selectors, slash-joined (no leading slash) for JSON pointers. */
export function selectorText(selector: Selector): string {
  return selector.path.join(selector.type === "bexpr" ? "." : "/");
}
