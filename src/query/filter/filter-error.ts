/**
 * Where in the filter expression something went wrong, counted the way
 * go-bexpr's generated parser (pigeon) counts: `offset` in UTF-8 bytes,
 * `line` from 1, `column` in code points from 1. Matching those numbers keeps
 * our messages identical to Nomad's for the same input.
 */
export interface FilterPosition {
  readonly offset: number;
  readonly line: number;
  readonly column: number;
}

/**
 * `syntax`: the expression does not parse (Nomad: 400 when the paginator is
 * created; also a filter too long or too deeply nested to accept). `regexp`:
 * a `matches` pattern that Go would reject (Nomad reports that only when a
 * row is evaluated; we report it up front). `evaluation`: a row made a
 * clause fail (unknown struct field, uncoercible value, ...).
 */
export type FilterErrorKind = "syntax" | "regexp" | "evaluation";

/**
 * A bad filter. `detail` is the text Nomad itself would put in its error
 * (bexpr's `1:14 (13): no match found, ...` for syntax errors, the evaluator's
 * message otherwise); `message` adds the `filter:` prefix and, when `detail`
 * does not already start with it, where the offending clause or value starts.
 */
export class FilterError extends Error {
  override readonly name = "FilterError";

  constructor(
    readonly kind: FilterErrorKind,
    readonly detail: string,
    readonly position: FilterPosition,
  ) {
    super(kind === "syntax" ? `filter: ${detail}` : `filter: ${formatPosition(position)}: ${detail}`);
  }
}

export function formatPosition(position: FilterPosition): string {
  return `${position.line}:${position.column} (${position.offset})`;
}

/**
 * Converts a UTF-16 index into pigeon's position. Pigeon advances its column
 * when it *reads* a rune, and a newline resets the column to 0 as it is read,
 * so a position sitting on a `\n` reports the next line, column 0; the end of
 * input counts as one more rune read.
 */
export function positionAt(input: string, index: number): FilterPosition {
  let line = 1;
  let column = 0;
  let offset = 0;
  let i = 0;
  while (i < index && i < input.length) {
    const cp = input.codePointAt(i) ?? 0;
    offset += utf8Length(cp);
    column++;
    if (cp === 0x0a) {
      line++;
      column = 0;
    }
    i += cp > 0xffff ? 2 : 1;
  }
  // The rune at `index` has been read too (or the end-of-input marker has).
  const current = i < input.length ? (input.codePointAt(i) ?? 0) : -1;
  column++;
  if (current === 0x0a) {
    line++;
    column = 0;
  }
  return { offset, line, column };
}

function utf8Length(cp: number): number {
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp < 0x10000) return 3;
  return 4;
}
