import type { Expression, MatchExpression, MatchOperator, Selector } from "./ast.ts";
import { selectorText } from "./ast.ts";
import { FilterError, formatPosition, positionAt } from "./filter-error.ts";
import { goUnquote } from "./go-strconv.ts";

/**
 * A hand-written copy of go-bexpr v0.1.12's grammar/grammar.peg (the version
 * Nomad 1.5 vendors), executed the way pigeon executes PEGs: ordered choice,
 * backtracking, and pigeon's error bookkeeping — the farthest failure position
 * with the set of things expected there (inverted inside `!…`), plus the
 * custom errors the grammar raises from `&{…}` predicates and actions. Keeping
 * every alternative, in grammar order, is what makes positions and "expected"
 * lists come out identical to Nomad's. Results are memoised per rule and
 * position so deeply nested parentheses stay linear instead of exponential.
 *
 * Two bounds that bexpr does not have keep one request from taking the
 * server down: the input's length, and its nesting of parentheses and `not`
 * (the only recursion left; `and` / `or` chains are parsed as loops).
 */

const FAIL: unique symbol = Symbol("fail");
type Result<T> = T | typeof FAIL;

/**
 * Filters arrive in a URL query string (or an eval-delete body); Node refuses
 * request heads over 16 KiB by default, so no GET can carry more than this,
 * and hand-written filters are a few hundred characters. The cap bounds the
 * parser's memo table and the compiled closures for any route.
 */
export const MAX_FILTER_LENGTH = 16 * 1024;

/**
 * Parentheses plus `not`s, nested. Each level costs ~15 JS frames here and
 * one on every evaluated row; 64 is far beyond any real filter and far below
 * the stack's limit (~10,000 frames).
 */
export const MAX_FILTER_DEPTH = 64;

interface CustomError {
  readonly index: number;
  readonly rule: string;
  readonly message: string;
}

export function parseFilter(input: string): Expression {
  if (input.length > MAX_FILTER_LENGTH) {
    // Checked before parsing, so a megabyte costs nothing; the position is where the limit falls.
    const position = positionAt(input, MAX_FILTER_LENGTH);
    throw new FilterError(
      "syntax",
      `${formatPosition(position)}: filter expression is ${input.length} characters long; ` +
        `the limit is ${MAX_FILTER_LENGTH}`,
      position,
    );
  }
  return new Parser(input).parse();
}

const isWhitespace = (cp: number) => cp === 0x20 || cp === 0x09 || cp === 0x0d || cp === 0x0a;
const isAsciiLetter = (cp: number) => (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a);
const isDigit = (cp: number) => cp >= 0x30 && cp <= 0x39;
const isNonZeroDigit = (cp: number) => cp >= 0x31 && cp <= 0x39;
const isIdentifierRest = (cp: number) => isAsciiLetter(cp) || isDigit(cp) || cp === 0x5f || cp === 0x2f;
const POINTER_PUNCTUATION = new Set([0x2d, 0x5f, 0x2e, 0x7e, 0x3a, 0x7c]);
const LETTER_OR_NUMBER = /^[\p{L}\p{N}]$/u;
const isPointerChar = (cp: number) =>
  POINTER_PUNCTUATION.has(cp) ||
  (cp > 0x7f ? LETTER_OR_NUMBER.test(String.fromCodePoint(cp)) : isIdentifierRest(cp) && cp !== 0x2f);

class Parser {
  private pos = 0;
  private maxFailPos = 0;
  private expected: string[] = [];
  private inverted = false;
  private depth = 0;
  private readonly errors: CustomError[] = [];
  private readonly memo = new Map<string, { value: unknown; end: number }>();

  constructor(private readonly src: string) {}

  parse(): Expression {
    const result = this.input();
    if (this.errors.length > 0) throw this.customErrors();
    if (result === FAIL) throw this.noMatch();
    return result;
  }

  // ---- error bookkeeping (pigeon's failAt / addErrAt) ----

  private failAt(success: boolean, index: number, want: string): void {
    if (success !== this.inverted) return;
    if (index < this.maxFailPos) return;
    if (index > this.maxFailPos) {
      this.maxFailPos = index;
      this.expected = [];
    }
    this.expected.push(this.inverted ? `!${want}` : want);
  }

  private addError(index: number, rule: string, message: string): void {
    this.errors.push({ index, rule, message });
  }

  private customErrors(): FilterError {
    const lines: string[] = [];
    for (const e of this.errors) {
      const line = `${formatPosition(positionAt(this.src, e.index))}: rule "${e.rule}": ${e.message}`;
      if (!lines.includes(line)) lines.push(line);
    }
    const first = this.errors[0] as CustomError;
    return new FilterError("syntax", lines.join("\n"), positionAt(this.src, first.index));
  }

  private noMatch(): FilterError {
    const wants = new Set(this.expected);
    const eof = wants.delete("!.");
    const list = [...wants].sort(compareGoStrings);
    if (eof) list.push("EOF");
    const position = positionAt(this.src, this.maxFailPos);
    return new FilterError(
      "syntax",
      `${formatPosition(position)}: no match found, expected: ${listJoin(list)}`,
      position,
    );
  }

  // ---- primitive matchers ----

  private lit(text: string): boolean {
    const start = this.pos;
    const want = JSON.stringify(text);
    if (this.src.startsWith(text, start)) {
      this.pos += text.length;
      this.failAt(true, start, want);
      return true;
    }
    this.failAt(false, start, want);
    return false;
  }

  private cls(want: string, test: (cp: number) => boolean): boolean {
    const start = this.pos;
    const cp = this.src.codePointAt(start);
    if (cp !== undefined && test(cp)) {
      this.pos += cp > 0xffff ? 2 : 1;
      this.failAt(true, start, want);
      return true;
    }
    this.failAt(false, start, want);
    return false;
  }

  private any(): boolean {
    return this.cls(".", () => true);
  }

  private notAhead(parse: () => boolean): boolean {
    const start = this.pos;
    this.inverted = !this.inverted;
    const ok = parse();
    this.inverted = !this.inverted;
    this.pos = start;
    return !ok;
  }

  private andAhead(parse: () => boolean): boolean {
    const start = this.pos;
    const ok = parse();
    this.pos = start;
    return ok;
  }

  private memoized<T>(rule: string, parse: () => Result<T>): Result<T> {
    const key = `${rule}:${this.pos}:${this.inverted ? 1 : 0}`;
    const hit = this.memo.get(key);
    if (hit !== undefined) {
      this.pos = hit.end;
      return hit.value as Result<T>;
    }
    const value = parse();
    this.memo.set(key, { value, end: this.pos });
    return value;
  }

  // ---- grammar rules ----

  /** `_ "whitespace" <- [ \t\r\n]+`; callers use it as `_?` by ignoring the result. */
  private ws(): boolean {
    if (!this.cls("[ \\t\\r\\n]", isWhitespace)) return false;
    while (this.cls("[ \\t\\r\\n]", isWhitespace));
    return true;
  }

  private eof(): boolean {
    return this.notAhead(() => this.any());
  }

  private input(): Result<Expression> {
    const start = this.pos;
    this.ws();
    if (this.lit("(")) {
      this.ws();
      const expr = this.nested(() => this.or());
      if (expr !== FAIL) {
        this.ws();
        if (this.lit(")")) {
          this.ws();
          if (this.eof()) return expr;
        }
      }
    }
    this.pos = start;
    this.ws();
    const expr = this.or();
    if (expr !== FAIL) {
      this.ws();
      if (this.eof()) return expr;
    }
    this.pos = start;
    return FAIL;
  }

  /** Wraps the recursion through `(` and `not`, refusing it beyond MAX_FILTER_DEPTH. */
  private nested<T>(parse: () => T): T {
    if (++this.depth > MAX_FILTER_DEPTH) {
      const position = positionAt(this.src, this.pos);
      throw new FilterError(
        "syntax",
        `${formatPosition(position)}: expression nests parentheses and "not" deeper than ${MAX_FILTER_DEPTH} levels`,
        position,
      );
    }
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  private or(): Result<Expression> {
    return this.memoized("or", () => this.chain("or", () => this.and()));
  }

  private and(): Result<Expression> {
    return this.memoized("and", () => this.chain("and", () => this.not()));
  }

  /**
   * `Or <- And _ "or" _ Or / And` (and `And` over `Not` alike) as a loop. It
   * tries the same things in the same order as the right recursion (whose
   * fallback re-parses the memoised left operand), so pigeon's error
   * bookkeeping is unchanged, but a chain of clauses takes no stack.
   */
  private chain(word: "and" | "or", operand: () => Result<Expression>): Result<Expression> {
    const first = operand();
    if (first === FAIL) return FAIL;
    const operands = [first];
    for (;;) {
      const before = this.pos;
      if (this.ws() && this.lit(word) && this.ws()) {
        const next = operand();
        if (next !== FAIL) {
          operands.push(next);
          continue;
        }
      }
      this.pos = before;
      break;
    }
    // Right-nested, as the grammar builds it.
    let expr = operands.pop() as Expression;
    for (let left = operands.pop(); left !== undefined; left = operands.pop()) {
      expr = { kind: word, left, right: expr };
    }
    return expr;
  }

  private not(): Result<Expression> {
    return this.memoized("not", () => {
      const start = this.pos;
      if (this.lit("not") && this.ws()) {
        const operand = this.nested(() => this.not());
        // `not not x` is x, as bexpr simplifies it.
        if (operand !== FAIL) return operand.kind === "not" ? operand.operand : { kind: "not", operand };
      }
      this.pos = start;
      return this.paren();
    });
  }

  /** `ParenthesizedExpression "grouping"`. */
  private paren(): Result<Expression> {
    return this.memoized("paren", () => {
      const start = this.pos;
      if (this.lit("(")) {
        this.ws();
        const expr = this.nested(() => this.or());
        if (expr !== FAIL) {
          this.ws();
          if (this.lit(")")) return expr;
        }
      }
      this.pos = start;
      const match = this.match();
      if (match !== FAIL) return match;
      this.pos = start;
      if (this.lit("(")) {
        this.ws();
        if (this.nested(() => this.or()) !== FAIL) {
          this.ws();
          if (this.notAhead(() => this.lit(")")))
            this.addError(this.pos, "grouping", "Unmatched parentheses");
        }
      }
      this.pos = start;
      return FAIL;
    });
  }

  /** `MatchExpression "match" <- MatchSelectorOpValue / MatchSelectorOp / MatchValueOpSelector`. */
  private match(): Result<MatchExpression> {
    const start = this.pos;
    const a = this.matchSelectorOpValue();
    if (a !== FAIL) return a;
    this.pos = start;
    const b = this.matchSelectorOp();
    if (b !== FAIL) return b;
    this.pos = start;
    const c = this.matchValueOpSelector();
    if (c !== FAIL) return c;
    this.pos = start;
    return FAIL;
  }

  private matchSelectorOpValue(): Result<MatchExpression> {
    const start = this.pos;
    const selector = this.selector();
    if (selector !== FAIL) {
      const operator = this.firstOperator([
        () => this.opSymbol("==", "equal"),
        () => this.opSymbol("!=", "notEqual"),
        () => this.opWords(["contains"], "in"),
        () => this.opWords(["not", "contains"], "notIn"),
        () => this.opWords(["matches"], "matches"),
        () => this.opWords(["not", "matches"], "notMatches"),
      ]);
      if (operator !== FAIL) {
        const valueIndex = this.pos;
        const value = this.value();
        if (value !== FAIL) return { kind: "match", operator, selector, value, valueIndex, index: start };
      }
    }
    this.pos = start;
    return FAIL;
  }

  private matchSelectorOp(): Result<MatchExpression> {
    const start = this.pos;
    const selector = this.selector();
    if (selector !== FAIL) {
      const operator = this.firstOperator([
        () => this.opWords(["is", "empty"], "isEmpty", true),
        () => this.opWords(["is", "not", "empty"], "isNotEmpty", true),
      ]);
      if (operator !== FAIL) return { kind: "match", operator, selector, index: start };
    }
    this.pos = start;
    return FAIL;
  }

  private matchValueOpSelector(): Result<MatchExpression> {
    const start = this.pos;
    const inOperators = [() => this.opWords(["in"], "in"), () => this.opWords(["not", "in"], "notIn")];
    const value = this.value();
    if (value !== FAIL) {
      const operator = this.firstOperator(inOperators);
      if (operator !== FAIL) {
        const selector = this.selector();
        if (selector !== FAIL)
          return { kind: "match", operator, selector, value, valueIndex: start, index: start };
      }
    }
    this.pos = start;
    if (this.value() !== FAIL && this.firstOperator(inOperators) !== FAIL) {
      if (this.notAhead(() => this.selector() !== FAIL)) this.addError(this.pos, "match", "Invalid selector");
    }
    this.pos = start;
    return FAIL;
  }

  private firstOperator(choices: readonly (() => Result<MatchOperator>)[]): Result<MatchOperator> {
    const start = this.pos;
    for (const choice of choices) {
      const op = choice();
      if (op !== FAIL) return op;
      this.pos = start;
    }
    return FAIL;
  }

  /** `_? "==" _?` style operators: whitespace optional on both sides. */
  private opSymbol(symbol: string, operator: MatchOperator): Result<MatchOperator> {
    this.ws();
    if (!this.lit(symbol)) return FAIL;
    this.ws();
    return operator;
  }

  /** `_ "not" _ "in" _` style operators: whitespace required around each word (not after `empty`). */
  private opWords(words: readonly string[], operator: MatchOperator, last = false): Result<MatchOperator> {
    for (const word of words) {
      if (!this.ws() || !this.lit(word)) return FAIL;
    }
    if (!last && !this.ws()) return FAIL;
    return operator;
  }

  /** `Selector "selector"`: identifier path, or a quoted JSON pointer. */
  private selector(): Result<Selector> {
    return this.memoized("selector", () => {
      const start = this.pos;
      const first = this.identifier();
      if (first !== FAIL) {
        const path = [first];
        for (;;) {
          const part = this.selectorOrIndex();
          if (part === FAIL) break;
          path.push(part);
        }
        return { type: "bexpr", path, index: start };
      }
      this.pos = start;
      if (this.lit('"')) {
        const segments: string[] = [];
        for (;;) {
          const segment = this.jsonPointerSegment();
          if (segment === FAIL) break;
          segments.push(segment);
        }
        if (this.lit('"')) return { type: "jsonPointer", path: pointerParts(segments), index: start };
      }
      this.pos = start;
      return FAIL;
    });
  }

  private jsonPointerSegment(): Result<string> {
    const start = this.pos;
    if (this.lit("/") && this.cls("[\\pL\\pN-_.~:|]", isPointerChar)) {
      while (this.cls("[\\pL\\pN-_.~:|]", isPointerChar));
      return this.src.slice(start + 1, this.pos);
    }
    this.pos = start;
    return FAIL;
  }

  private identifier(): Result<string> {
    const start = this.pos;
    if (!this.cls("[a-zA-Z]", isAsciiLetter)) return FAIL;
    while (this.cls("[a-zA-Z0-9_/]", isIdentifierRest));
    return this.src.slice(start, this.pos);
  }

  private selectorOrIndex(): Result<string> {
    const start = this.pos;
    if (this.lit(".")) {
      const ident = this.identifier();
      if (ident !== FAIL) return ident;
    }
    this.pos = start;
    const index = this.indexExpression();
    if (index !== FAIL) return index;
    this.pos = start;
    if (this.lit(".") && this.cls("[0-9]", isDigit)) {
      while (this.cls("[0-9]", isDigit));
      return this.src.slice(start + 1, this.pos);
    }
    this.pos = start;
    return FAIL;
  }

  /** `IndexExpression "index"`: `["key"]`, with bexpr's two custom errors. */
  private indexExpression(): Result<string> {
    const start = this.pos;
    if (this.lit("[")) {
      this.ws();
      const key = this.stringLiteral();
      if (key !== FAIL) {
        this.ws();
        if (this.lit("]")) return key;
      }
    }
    this.pos = start;
    if (this.lit("[")) {
      this.ws();
      if (this.notAhead(() => this.stringLiteral() !== FAIL))
        this.addError(this.pos, "index", "Invalid index");
    }
    this.pos = start;
    if (this.lit("[")) {
      this.ws();
      if (this.stringLiteral() !== FAIL) {
        this.ws();
        if (this.notAhead(() => this.lit("]"))) this.addError(this.pos, "index", "Unclosed index expression");
      }
    }
    this.pos = start;
    return FAIL;
  }

  /**
   * `Value "value" <- Selector / NumberLiteral / StringLiteral`. A selector in
   * value position stands for its printed text, so `Status == pending` works —
   * and so does bexpr's quirk that `"/a/b"` parses as a JSON pointer and means
   * the string `a/b`.
   */
  private value(): Result<string> {
    return this.memoized("value", () => {
      const start = this.pos;
      const selector = this.selector();
      if (selector !== FAIL) return selectorText(selector);
      this.pos = start;
      const number = this.numberLiteral();
      if (number !== FAIL) return number;
      this.pos = start;
      const string = this.stringLiteral();
      if (string !== FAIL) return string;
      this.pos = start;
      return FAIL;
    });
  }

  /** `NumberLiteral "number"`: must be followed by whitespace, end of input or `)`. */
  private numberLiteral(): Result<string> {
    const start = this.pos;
    this.lit("-");
    if (this.integerOrFloat() && this.andAhead(() => this.afterNumbers()))
      return this.src.slice(start, this.pos);
    this.pos = start;
    this.lit("-");
    if (this.integerOrFloat() && this.notAhead(() => this.afterNumbers())) {
      this.addError(this.pos, "number", "Invalid number literal");
    }
    this.pos = start;
    return FAIL;
  }

  /** `AfterNumbers <- &(_ / EOF / ")")`. */
  private afterNumbers(): boolean {
    return this.andAhead(() => {
      const start = this.pos;
      if (this.ws()) return true;
      this.pos = start;
      if (this.eof()) return true;
      return this.lit(")");
    });
  }

  /** `IntegerOrFloat <- ("0" / [1-9][0-9]*) ("." [0-9]+)?`. */
  private integerOrFloat(): boolean {
    const start = this.pos;
    if (!this.lit("0")) {
      if (!this.cls("[1-9]", isNonZeroDigit)) {
        this.pos = start;
        return false;
      }
      while (this.cls("[0-9]", isDigit));
    }
    const fraction = this.pos;
    if (this.lit(".") && this.cls("[0-9]", isDigit)) {
      while (this.cls("[0-9]", isDigit));
    } else {
      this.pos = fraction;
    }
    return true;
  }

  /** `StringLiteral "string"`: backtick or double-quoted, unquoted as Go does. */
  private stringLiteral(): Result<string> {
    return this.memoized("string", () => {
      const start = this.pos;
      if (this.eitherQuote(true)) {
        const unquoted = goUnquote(this.src.slice(start, this.pos));
        if (unquoted === undefined) {
          this.addError(start, "string", "invalid syntax");
          return "";
        }
        return unquoted;
      }
      this.pos = start;
      if (this.eitherQuote(false)) {
        if (this.eof()) this.addError(this.pos, "string", "Unterminated string literal");
      }
      this.pos = start;
      return FAIL;
    });
  }

  /** `` '`' … / '"' … `` — the backtick form first, as the grammar orders them. */
  private eitherQuote(closed: boolean): boolean {
    const start = this.pos;
    if (this.quoted("`", closed)) return true;
    this.pos = start;
    return this.quoted('"', closed);
  }

  /** `q (!q .)* q` when closed, or the unterminated prefix `q (!q .)*` when not. */
  private quoted(quote: string, closed: boolean): boolean {
    if (!this.lit(quote)) return false;
    while (this.notAhead(() => this.lit(quote)) && this.any());
    return closed ? this.lit(quote) : true;
  }
}

/** pointerstructure.Parse: split on `/`, then unescape `~1` to `/` and `~0` to `~`. */
function pointerParts(segments: readonly string[]): string[] {
  if (segments.length === 0) return [""];
  return segments.map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
}

/** Go's sort.Strings order (bytewise on UTF-8, which is code point order). */
function compareGoStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** pigeon's listJoin: `a, b, c or d`. */
function listJoin(items: readonly string[]): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} or ${items[items.length - 1]}`;
}
