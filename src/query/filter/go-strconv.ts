/**
 * The parts of Go's strconv that go-bexpr leans on: string literal unquoting
 * (the grammar calls strconv.Unquote) and the coercions applied to a value
 * before comparing it with a field (ParseBool, ParseInt/ParseUint with base 0,
 * ParseFloat). Reimplemented rather than approximated with Number()/JSON.parse
 * because their accepted syntaxes differ (`0x1F`, `0o17`, `1_000`, `t`, `F`...).
 */

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** strconv.Unquote for "…" and `…` literals; undefined means "invalid syntax". */
export function goUnquote(literal: string): string | undefined {
  const quote = literal[0];
  if (literal.length < 2 || literal[literal.length - 1] !== quote) return undefined;
  const body = literal.slice(1, -1);
  if (quote === "`") {
    if (body.includes("`")) return undefined;
    // Go drops carriage returns from raw strings.
    return body.includes("\r") ? body.replaceAll("\r", "") : body;
  }
  if (quote !== '"') return undefined;
  if (!body.includes("\\")) return body.includes("\n") || body.includes('"') ? undefined : body;
  return unquoteEscapes(body);
}

const SIMPLE_ESCAPES: Readonly<Record<string, number>> = {
  a: 0x07,
  b: 0x08,
  f: 0x0c,
  n: 0x0a,
  r: 0x0d,
  t: 0x09,
  v: 0x0b,
  "\\": 0x5c,
  '"': 0x22,
};

/**
 * `\x` and octal escapes produce raw bytes in Go, so the result is built as
 * UTF-8 bytes and decoded once; invalid sequences become U+FFFD, which is the
 * closest a JS string gets to Go's arbitrary byte strings.
 */
function unquoteEscapes(body: string): string | undefined {
  const bytes: number[] = [];
  const encoder = new TextEncoder();
  let i = 0;
  while (i < body.length) {
    const c = body[i] as string;
    if (c === '"' || c === "\n") return undefined;
    if (c !== "\\") {
      const cp = body.codePointAt(i) ?? 0;
      const width = cp > 0xffff ? 2 : 1;
      for (const b of encoder.encode(body.slice(i, i + width))) bytes.push(b);
      i += width;
      continue;
    }
    const e = body[i + 1];
    if (e === undefined) return undefined;
    const simple = SIMPLE_ESCAPES[e];
    if (simple !== undefined) {
      bytes.push(simple);
      i += 2;
      continue;
    }
    if (e === "x" || e === "u" || e === "U") {
      const digits = e === "x" ? 2 : e === "u" ? 4 : 8;
      const hex = body.slice(i + 2, i + 2 + digits);
      if (hex.length !== digits || !/^[0-9a-fA-F]+$/.test(hex)) return undefined;
      const value = Number.parseInt(hex, 16);
      if (e === "x") bytes.push(value);
      else {
        if (value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return undefined;
        for (const b of encoder.encode(String.fromCodePoint(value))) bytes.push(b);
      }
      i += 2 + digits;
      continue;
    }
    if (e >= "0" && e <= "7") {
      const oct = body.slice(i + 1, i + 4);
      if (!/^[0-7]{3}$/.test(oct)) return undefined;
      const value = Number.parseInt(oct, 8);
      if (value > 255) return undefined;
      bytes.push(value);
      i += 4;
      continue;
    }
    return undefined;
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** strconv.ParseBool. */
export function parseGoBool(s: string): Parsed<boolean> {
  switch (s) {
    case "1":
    case "t":
    case "T":
    case "TRUE":
    case "true":
    case "True":
      return { ok: true, value: true };
    case "0":
    case "f":
    case "F":
    case "FALSE":
    case "false":
    case "False":
      return { ok: true, value: false };
    default:
      return { ok: false, error: syntaxError("ParseBool", s) };
  }
}

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

/** strconv.ParseInt(s, 0, 64): sign, 0x/0o/0b/leading-0 prefixes, `_` separators. */
export function parseGoInt(s: string): Parsed<bigint> {
  if (s === "") return { ok: false, error: syntaxError("ParseInt", s) };
  let rest = s;
  let negative = false;
  if (rest[0] === "+" || rest[0] === "-") {
    negative = rest[0] === "-";
    rest = rest.slice(1);
  }
  const magnitude = parseGoUintDigits(rest);
  if (magnitude === undefined || (rest.includes("_") && !underscoreOK(s))) {
    return { ok: false, error: syntaxError("ParseInt", s) };
  }
  const value = negative ? -magnitude : magnitude;
  if (value > INT64_MAX || value < INT64_MIN) return { ok: false, error: rangeError("ParseInt", s) };
  return { ok: true, value };
}

/** Digits after the sign, base chosen by prefix as ParseUint(s, 0, …) does. */
function parseGoUintDigits(s: string): bigint | undefined {
  if (s === "") return undefined;
  let base = 10;
  let digits = s;
  if (s[0] === "0") {
    const p = s[1]?.toLowerCase();
    if (s.length >= 3 && (p === "b" || p === "o" || p === "x")) {
      base = p === "b" ? 2 : p === "o" ? 8 : 16;
      digits = s.slice(2);
    } else {
      base = 8;
      digits = s.slice(1);
    }
  }
  let value = 0n;
  const bigBase = BigInt(base);
  for (const ch of digits) {
    if (ch === "_") continue;
    const d = digitValue(ch);
    if (d >= base) return undefined;
    value = value * bigBase + BigInt(d);
  }
  return value;
}

function digitValue(ch: string): number {
  const c = ch.toLowerCase();
  if (c >= "0" && c <= "9") return c.charCodeAt(0) - 48;
  if (c >= "a" && c <= "z") return c.charCodeAt(0) - 87;
  return 99;
}

/** Go's underscoreOK: `_` only between digits, or between a base prefix and a digit. */
function underscoreOK(input: string): boolean {
  let s = input;
  if (s[0] === "+" || s[0] === "-") s = s.slice(1);
  let saw = "^";
  let i = 0;
  let hex = false;
  const p = s[1]?.toLowerCase();
  if (s.length >= 2 && s[0] === "0" && (p === "b" || p === "o" || p === "x")) {
    i = 2;
    saw = "0";
    hex = p === "x";
  }
  for (; i < s.length; i++) {
    const c = (s[i] as string).toLowerCase();
    if ((c >= "0" && c <= "9") || (hex && c >= "a" && c <= "f")) {
      saw = "0";
      continue;
    }
    if (c === "_") {
      if (saw !== "0") return false;
      saw = "_";
      continue;
    }
    if (saw === "_") return false;
    saw = "!";
  }
  return saw !== "_";
}

const DECIMAL_FLOAT = /^[+-]?(?=\.?[0-9])[0-9_]*(?:\.[0-9_]*)?(?:[eE][+-]?[0-9_]+)?$/;
const HEX_FLOAT = /^([+-]?)0[xX]([0-9a-fA-F_]*)(?:\.([0-9a-fA-F_]*))?[pP]([+-]?[0-9_]+)$/;

/** strconv.ParseFloat(s, 64), including inf/nan spellings and hex floats. */
export function parseGoFloat(s: string): Parsed<number> {
  const lower = s.toLowerCase();
  const unsigned = lower[0] === "+" || lower[0] === "-" ? lower.slice(1) : lower;
  if (unsigned === "inf" || unsigned === "infinity") {
    return { ok: true, value: lower[0] === "-" ? -Infinity : Infinity };
  }
  if (lower === "nan") return { ok: true, value: Number.NaN };
  let value: number;
  const hex = HEX_FLOAT.exec(s);
  if (hex) {
    const [, sign, int = "", frac = ""] = hex;
    if (int.length + frac.length === 0 || !underscoreOK(s.replace(/[pP].*$/, ""))) {
      return { ok: false, error: syntaxError("ParseFloat", s) };
    }
    const mantissa = Number.parseInt((int + frac).replaceAll("_", "") || "0", 16);
    const exponent =
      Number.parseInt((hex[4] ?? "0").replaceAll("_", ""), 10) - 4 * frac.replaceAll("_", "").length;
    value = (sign === "-" ? -1 : 1) * mantissa * 2 ** exponent;
  } else if (DECIMAL_FLOAT.test(s) && (!s.includes("_") || underscoreOK(s))) {
    value = Number(s.replaceAll("_", ""));
  } else {
    return { ok: false, error: syntaxError("ParseFloat", s) };
  }
  if (!Number.isFinite(value)) return { ok: false, error: rangeError("ParseFloat", s) };
  return { ok: true, value };
}

function syntaxError(fn: string, s: string): string {
  return `strconv.${fn}: parsing ${JSON.stringify(s)}: invalid syntax`;
}

function rangeError(fn: string, s: string): string {
  return `strconv.${fn}: parsing ${JSON.stringify(s)}: value out of range`;
}
