/**
 * Translates Go RE2 syntax (regexp.Compile, i.e. syntax.Perl flags) into an
 * equivalent JS RegExp with the `u` flag, or refuses it.
 *
 * Only existence of a match matters to `matches`, and both engines pick the
 * leftmost-first match, so a syntactic translation is enough. The places where
 * the two dialects read the same text differently are rewritten explicitly:
 * `\d \s \w` are ASCII-only in Go (and Go's `\s` has no `\v`), `.` never
 * matches `\n` unless (?s), `^`/`$` mean start/end of text unless (?m), POSIX
 * `[[:alpha:]]` classes, `\Q…\E`, `\x{…}`, octal escapes, `\pL` short forms,
 * `(?U)` ungreedy mode, and a lone `{`, `}` or `]` being a literal. JS flags
 * are never used for m/s/U, so those Go flags can be scoped anywhere. Case
 * folding is the exception: JS has no scoped `i`, so `(?i)` is accepted only
 * when it covers every case-sensitive part of the pattern.
 */

export class Re2Error extends Error {
  override readonly name = "Re2Error";
}

export interface TranslatedRegExp {
  readonly source: string;
  readonly flags: string;
}

interface Flags {
  i: boolean;
  m: boolean;
  s: boolean;
  U: boolean;
}

type Range = readonly [number, number];

const MAX_CODE_POINT = 0x10ffff;
const DIGIT: readonly Range[] = [[0x30, 0x39]];
const SPACE: readonly Range[] = [
  [0x09, 0x0a],
  [0x0c, 0x0d],
  [0x20, 0x20],
];
const WORD: readonly Range[] = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];

const POSIX: Readonly<Record<string, readonly Range[]>> = {
  alnum: [
    [0x30, 0x39],
    [0x41, 0x5a],
    [0x61, 0x7a],
  ],
  alpha: [
    [0x41, 0x5a],
    [0x61, 0x7a],
  ],
  ascii: [[0x00, 0x7f]],
  blank: [
    [0x09, 0x09],
    [0x20, 0x20],
  ],
  cntrl: [
    [0x00, 0x1f],
    [0x7f, 0x7f],
  ],
  digit: DIGIT,
  graph: [[0x21, 0x7e]],
  lower: [[0x61, 0x7a]],
  print: [[0x20, 0x7e]],
  punct: [
    [0x21, 0x2f],
    [0x3a, 0x40],
    [0x5b, 0x60],
    [0x7b, 0x7e],
  ],
  space: [
    [0x09, 0x0d],
    [0x20, 0x20],
  ],
  upper: [[0x41, 0x5a]],
  word: WORD,
  xdigit: [
    [0x30, 0x39],
    [0x41, 0x46],
    [0x61, 0x66],
  ],
};

const GENERAL_CATEGORIES = new Set(
  "C Cc Cf Co Cs L Ll Lm Lo Lt Lu M Mc Me Mn N Nd Nl No P Pc Pd Pe Pf Pi Po Ps S Sc Sk Sm So Z Zl Zp Zs".split(
    " ",
  ),
);

const MAX_REPEAT = 1000;

export function translateRe2(pattern: string): TranslatedRegExp {
  return new Translator(pattern).run();
}

class Translator {
  private pos = 0;
  private out = "";
  private flags: Flags = { i: false, m: false, s: false, U: false };
  private readonly groupFlags: Flags[] = [];
  private readonly groupNames = new Set<string>();
  /** What the last emitted item was, to reproduce Go's repetition errors. */
  private last: "none" | "atom" | "repeat" = "none";
  private foldedCaseParts = 0;
  private exactCaseParts = 0;

  constructor(private readonly pattern: string) {}

  run(): TranslatedRegExp {
    const p = this.pattern;
    while (this.pos < p.length) {
      const c = this.peekCodePoint();
      switch (c) {
        case 0x28 /* ( */:
          this.openGroup();
          break;
        case 0x29 /* ) */:
          this.closeGroup();
          break;
        case 0x7c /* | */:
          this.pos++;
          this.out += "|";
          this.last = "none";
          break;
        case 0x2a /* * */:
        case 0x2b /* + */:
        case 0x3f /* ? */:
          this.pos++;
          this.repeat(String.fromCodePoint(c));
          break;
        case 0x7b /* { */:
          this.brace();
          break;
        case 0x5e /* ^ */:
          this.pos++;
          this.atom(this.flags.m ? "(?:(?<![^\\n]))" : "(?:^)", false);
          break;
        case 0x24 /* $ */:
          this.pos++;
          this.atom(this.flags.m ? "(?:(?![^\\n]))" : "(?:$)", false);
          break;
        case 0x2e /* . */:
          this.pos++;
          this.atom(this.flags.s ? "[\\s\\S]" : "[^\\n]", false);
          break;
        case 0x5b /* [ */:
          this.charClass();
          break;
        case 0x5c /* \ */:
          this.escape();
          break;
        default:
          this.pos += c > 0xffff ? 2 : 1;
          this.literal(c);
      }
    }
    if (this.groupFlags.length > 0) this.fail("missing closing )", p);
    if (this.foldedCaseParts > 0 && this.exactCaseParts > 0) {
      throw new Re2Error(
        "the (?i) flag applies to only part of the pattern; JavaScript cannot scope case-insensitivity, " +
          "so put (?i) at the very start to make the whole pattern case-insensitive",
      );
    }
    return { source: this.out, flags: this.foldedCaseParts > 0 ? "iu" : "u" };
  }

  private fail(code: string, fragment: string): never {
    throw new Re2Error(`error parsing regexp: ${code}: \`${fragment}\``);
  }

  private peekCodePoint(): number {
    return this.pattern.codePointAt(this.pos) ?? 0;
  }

  private atom(js: string, caseSensitive: boolean): void {
    if (caseSensitive) {
      if (this.flags.i) this.foldedCaseParts++;
      else this.exactCaseParts++;
    }
    this.out += js;
    this.last = "atom";
  }

  private literal(cp: number): void {
    const ch = String.fromCodePoint(cp);
    const hasCase = ch.toLowerCase() !== ch.toUpperCase();
    this.atom(isPlainLiteral(cp) ? ch : escapeCodePoint(cp), hasCase);
  }

  private repeat(op: string): void {
    if (this.last === "none") this.fail("missing argument to repetition operator", op);
    if (this.last === "repeat") this.fail("invalid nested repetition operator", op);
    let lazy = false;
    if (this.pattern[this.pos] === "?") {
      lazy = true;
      this.pos++;
    }
    if (this.flags.U) lazy = !lazy;
    this.out += op + (lazy ? "?" : "");
    this.last = "repeat";
  }

  private brace(): void {
    const m = /^\{([0-9]+)(,([0-9]*))?\}/.exec(this.pattern.slice(this.pos));
    if (!m) {
      // Not a well-formed repeat, so Go takes `{` literally.
      this.pos++;
      this.literal(0x7b);
      return;
    }
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === "" ? -1 : Number(m[3]);
    if (min > MAX_REPEAT || max > MAX_REPEAT || (max >= 0 && min > max)) {
      this.fail("invalid repeat count", m[0]);
    }
    this.pos += m[0].length;
    this.repeat(max === min ? `{${min}}` : max < 0 ? `{${min},}` : `{${min},${max}}`);
  }

  private openGroup(): void {
    const p = this.pattern;
    const start = this.pos;
    this.pos++;
    if (p[this.pos] !== "?") {
      this.pushGroup();
      return;
    }
    if (p.startsWith("?P<", this.pos)) {
      const end = p.indexOf(">", this.pos);
      if (end < 0) this.fail("invalid named capture", p.slice(start));
      const name = p.slice(this.pos + 3, end);
      if (!/^[A-Za-z0-9_]+$/.test(name)) this.fail("invalid named capture", p.slice(start, end + 1));
      if (this.groupNames.has(name)) this.fail("duplicate capture group name", p.slice(start, end + 1));
      this.groupNames.add(name);
      this.pos = end + 1;
      this.pushGroup();
      return;
    }
    // Flag syntax: (?flags) or (?flags:re), flags = [imsU]* with at most one `-`.
    const m = /^\?([imsU]*)(?:-([imsU]*))?([:)])/.exec(p.slice(this.pos));
    if (!m || (m[2] !== undefined && m[2] === "") || (m[1] === "" && m[2] === undefined && m[3] === ")")) {
      this.fail("invalid or unsupported Perl syntax", p.slice(start, start + 3));
    }
    this.pos += m[0].length;
    const next: Flags = { ...this.flags };
    for (const f of m[1] ?? "") next[f as keyof Flags] = true;
    for (const f of m[2] ?? "") next[f as keyof Flags] = false;
    if (m[3] === ")") {
      // Applies to the rest of the enclosing group.
      this.flags = next;
      return;
    }
    this.pushGroup();
    this.flags = next;
  }

  private pushGroup(): void {
    this.groupFlags.push({ ...this.flags });
    this.out += "(?:";
    this.last = "none";
  }

  private closeGroup(): void {
    const saved = this.groupFlags.pop();
    if (saved === undefined) this.fail("unexpected )", this.pattern);
    this.pos++;
    this.flags = saved;
    this.out += ")";
    this.last = "atom";
  }

  private escape(): void {
    const p = this.pattern;
    const start = this.pos;
    const c = p[this.pos + 1];
    if (c === undefined) this.fail("trailing backslash at end of expression", "");
    switch (c) {
      case "A":
        this.pos += 2;
        this.atom("(?:^)", false);
        return;
      case "z":
        this.pos += 2;
        this.atom("(?:$)", false);
        return;
      case "b":
      case "B":
        this.pos += 2;
        this.atom(`(?:\\${c})`, true);
        return;
      case "Q": {
        const end = p.indexOf("\\E", this.pos + 2);
        const text = end < 0 ? p.slice(this.pos + 2) : p.slice(this.pos + 2, end);
        this.pos = end < 0 ? p.length : end + 2;
        for (const ch of text) this.literal(ch.codePointAt(0) ?? 0);
        return;
      }
    }
    const set = this.classEscape();
    if (set !== undefined) {
      this.atom(`[${set.js}]`, set.caseSensitive);
      return;
    }
    this.pos = start;
    this.literal(this.singleCharEscape());
  }

  /** `\d \s \w` (and negations) and `\p…` / `\P…`; undefined if the escape is something else. */
  private classEscape(): { js: string; caseSensitive: boolean } | undefined {
    const p = this.pattern;
    const c = p[this.pos + 1];
    const perl: Readonly<Record<string, readonly Range[]>> = { d: DIGIT, s: SPACE, w: WORD };
    const lower = c?.toLowerCase() ?? "";
    const perlRanges = perl[lower];
    if (perlRanges !== undefined && c !== undefined) {
      this.pos += 2;
      const ranges = c === lower ? perlRanges : complement(perlRanges);
      return { js: rangesToJs(ranges), caseSensitive: lower === "w" };
    }
    if (c !== "p" && c !== "P") return undefined;
    const start = this.pos;
    let name: string;
    if (p[this.pos + 2] === "{") {
      const end = p.indexOf("}", this.pos + 3);
      if (end < 0) this.fail("invalid character class range", p.slice(start));
      name = p.slice(this.pos + 3, end);
      this.pos = end + 1;
    } else {
      const cp = p.codePointAt(this.pos + 2);
      if (cp === undefined) this.fail("invalid character class range", p.slice(start));
      name = String.fromCodePoint(cp);
      this.pos += 2 + name.length;
    }
    let negated = c === "P";
    if (name.startsWith("^")) {
      negated = !negated;
      name = name.slice(1);
    }
    return { js: unicodeClass(name, negated, p.slice(start, this.pos)), caseSensitive: true };
  }

  /** An escape that stands for one code point; advances past it. */
  private singleCharEscape(): number {
    const p = this.pattern;
    const start = this.pos;
    const c = p[this.pos + 1] ?? "";
    if (c === "") this.fail("trailing backslash at end of expression", "");
    this.pos += 2;
    const simple: Readonly<Record<string, number>> = { a: 7, f: 12, n: 10, r: 13, t: 9, v: 11 };
    const s = simple[c];
    if (s !== undefined) return s;
    if (c >= "0" && c <= "7") {
      // Go: a lone non-zero digit would be a backreference, which RE2 refuses.
      if (c !== "0" && !/[0-7]/.test(p[this.pos] ?? ""))
        this.fail("invalid escape sequence", p.slice(start, this.pos));
      let value = Number(c);
      for (let n = 0; n < 2 && /[0-7]/.test(p[this.pos] ?? ""); n++) {
        value = value * 8 + Number(p[this.pos]);
        this.pos++;
      }
      return value;
    }
    if (c === "x") {
      if (p[this.pos] === "{") {
        const end = p.indexOf("}", this.pos);
        const hex = end < 0 ? "" : p.slice(this.pos + 1, end);
        if (!/^[0-9a-fA-F]+$/.test(hex) || Number.parseInt(hex, 16) > MAX_CODE_POINT) {
          this.fail("invalid escape sequence", p.slice(start, end < 0 ? p.length : end + 1));
        }
        this.pos = end + 1;
        return Number.parseInt(hex, 16);
      }
      const hex = p.slice(this.pos, this.pos + 2);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) this.fail("invalid escape sequence", p.slice(start, this.pos + 2));
      this.pos += 2;
      return Number.parseInt(hex, 16);
    }
    const cp = p.codePointAt(start + 1) ?? 0;
    // Go: any escaped ASCII punctuation stands for itself.
    if (cp < 0x80 && !/[0-9A-Za-z]/.test(c)) return cp;
    this.fail("invalid escape sequence", p.slice(start, start + 1 + String.fromCodePoint(cp).length));
  }

  private charClass(): void {
    const p = this.pattern;
    const start = this.pos;
    this.pos++;
    let negated = false;
    if (p[this.pos] === "^") {
      negated = true;
      this.pos++;
    }
    let body = "";
    let first = true;
    let caseSensitive = false;
    while (first || p[this.pos] !== "]") {
      if (this.pos >= p.length) this.fail("missing closing ]", p.slice(start));
      first = false;
      const posix = /^\[:(\^?)([a-z]+):\]/.exec(p.slice(this.pos));
      if (posix) {
        const ranges = POSIX[posix[2] ?? ""];
        if (ranges === undefined) this.fail("invalid character class range", posix[0]);
        body += rangesToJs(posix[1] === "^" ? complement(ranges) : ranges);
        caseSensitive = true;
        this.pos += posix[0].length;
        continue;
      }
      if (p[this.pos] === "\\") {
        const set = this.classEscape();
        if (set !== undefined) {
          if (p[this.pos] === "-" && p[this.pos + 1] !== "]") {
            this.fail("invalid character class range", p.slice(start, this.pos + 2));
          }
          body += set.js;
          caseSensitive ||= set.caseSensitive;
          continue;
        }
      }
      const itemStart = this.pos;
      const lo = this.classChar();
      let hi = lo;
      if (p[this.pos] === "-" && p[this.pos + 1] !== undefined && p[this.pos + 1] !== "]") {
        this.pos++;
        if (p[this.pos] === "\\" && /[dDsSwWpP]/.test(p[this.pos + 1] ?? "")) {
          this.fail("invalid character class range", p.slice(itemStart, this.pos + 2));
        }
        hi = this.classChar();
        if (hi < lo) this.fail("invalid character class range", p.slice(itemStart, this.pos));
      }
      caseSensitive ||= mayHaveCase(lo, hi);
      body += lo === hi ? escapeCodePoint(lo) : `${escapeCodePoint(lo)}-${escapeCodePoint(hi)}`;
    }
    this.pos++;
    this.atom(`[${negated ? "^" : ""}${body}]`, caseSensitive);
  }

  private classChar(): number {
    const p = this.pattern;
    if (p[this.pos] === "\\") return this.singleCharEscape();
    const cp = p.codePointAt(this.pos) ?? 0;
    this.pos += cp > 0xffff ? 2 : 1;
    return cp;
  }
}

function unicodeClass(name: string, negated: boolean, fragment: string): string {
  const p = negated ? "P" : "p";
  let js: string;
  if (name === "Any") js = negated ? "" : "\\u{0}-\\u{10FFFF}";
  else if (GENERAL_CATEGORIES.has(name)) js = `\\${p}{${name}}`;
  else js = `\\${p}{Script=${name}}`;
  try {
    new RegExp(`[${js}]`, "u");
  } catch {
    throw new Re2Error(`error parsing regexp: invalid character class range: \`${fragment}\``);
  }
  return js;
}

function complement(ranges: readonly Range[]): Range[] {
  const out: Range[] = [];
  let next = 0;
  for (const [lo, hi] of ranges) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return out;
}

function rangesToJs(ranges: readonly Range[]): string {
  return ranges
    .map(([lo, hi]) => (lo === hi ? escapeCodePoint(lo) : `${escapeCodePoint(lo)}-${escapeCodePoint(hi)}`))
    .join("");
}

/** Conservative: any range touching ASCII letters or anything from U+00B5 (the first cased non-ASCII letter) up. */
function mayHaveCase(lo: number, hi: number): boolean {
  return hi >= 0xb5 || (lo <= 0x5a && hi >= 0x41) || (lo <= 0x7a && hi >= 0x61);
}

function isPlainLiteral(cp: number): boolean {
  return (cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a) || cp >= 0x80;
}

function escapeCodePoint(cp: number): string {
  return isPlainLiteral(cp) && cp < 0xd800
    ? String.fromCodePoint(cp)
    : `\\u{${cp.toString(16).toUpperCase()}}`;
}
