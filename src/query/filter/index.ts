import type { Predicate } from "./evaluate.ts";
import { compileExpression } from "./evaluate.ts";
import { parseFilter } from "./parser.ts";

export type { Expression, MatchExpression, MatchOperator, Selector } from "./ast.ts";
export type { FilterErrorKind, FilterPosition } from "./filter-error.ts";
export { FilterError } from "./filter-error.ts";

/** A compiled `?filter=` expression (Nomad's go-bexpr language). */
export interface Filter {
  /** The expression as the client sent it. */
  readonly expression: string;
  /**
   * Whether `row` (a JSON-shaped object with Nomad's PascalCase fields)
   * passes. Throws FilterError (kind `evaluation`) where Nomad's evaluator
   * returns an error, e.g. an unknown top-level field or a value that cannot
   * be coerced to the field's type.
   */
  matches(row: unknown): boolean;
}

class CompiledFilter implements Filter {
  constructor(
    readonly expression: string,
    private readonly predicate: Predicate,
  ) {}

  matches(row: unknown): boolean {
    return this.predicate(row);
  }
}

/**
 * Parses and compiles once; throws FilterError (kind `syntax`, or `regexp` for
 * a `matches` pattern that cannot be used) with bexpr's message and position.
 */
export function compileFilter(expression: string): Filter {
  return new CompiledFilter(expression, compileExpression(parseFilter(expression), expression));
}
