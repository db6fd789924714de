import { RE2JS, RE2JSException } from "re2js";

/**
 * Go's `regexp` (RE2) for `matches` filters and `regexp` constraints, via
 * re2js, a port of Go's own parser and automata. Matching is linear in the
 * input whatever the pattern, as in Nomad: V8's backtracking RegExp took
 * exponential time on `^(a+)+$` and froze the server for one request.
 *
 * Flags 0 is Go's syntax.Perl (the flags regexp.Compile uses), so the
 * dialect, its errors and its limits (repeat counts over 1000, nesting over
 * 1000) are Go's, worded as Go words them.
 */

export interface GoRegexp {
  /** regexp.MatchString: whether the pattern matches anywhere in `text`. */
  test(text: string): boolean;
}

export class GoRegexpError extends Error {
  override readonly name = "GoRegexpError";

  /** `reason` is Go's own text, e.g. ``error parsing regexp: missing closing ): `(a` ``. */
  constructor(
    readonly pattern: string,
    readonly reason: string,
  ) {
    super(`${reason} (in regular expression ${JSON.stringify(pattern)})`);
  }
}

/**
 * Longer patterns are refused before compiling. Go has no length limit, but
 * compiling here runs on the shared event loop at about 2 µs a character
 * (a 1 MB pattern held it for seconds); no filter or constraint needs more.
 */
export const MAX_PATTERN_LENGTH = 4096;

export function compileGoRegexp(pattern: string): GoRegexp {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new GoRegexpError(
      pattern.slice(0, 64) + "…",
      `error parsing regexp: pattern is ${pattern.length} characters, more than ${MAX_PATTERN_LENGTH}`,
    );
  }
  try {
    return RE2JS.compile(pattern);
  } catch (err) {
    if (err instanceof RE2JSException) throw new GoRegexpError(pattern, err.message);
    // re2js refuses deep nesting itself; this only keeps a stack overflow in
    // some unforeseen corner a compile error rather than a crash of the request.
    if (err instanceof RangeError)
      throw new GoRegexpError(pattern, "error parsing regexp: expression too complex");
    throw err;
  }
}
