import { goDuration } from "../jobs/go-values.ts";

/**
 * Durations as Nomad's ACL objects carry them in JSON: a Go duration string
 * ("1h0m0s") or a number of nanoseconds on input; on output the string, or
 * "" for zero (their MarshalJSON methods).
 */

// time.ParseDuration's units, in nanoseconds.
const UNITS: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  "\u00b5s": 1_000n,
  "\u03bcs": 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const INT64_MAX = (1n << 63n) - 1n;

export class GoDurationError extends Error {
  override readonly name = "GoDurationError";
}

const quote = (s: string) => JSON.stringify(s);

/**
 * Go's time.ParseDuration, in nanoseconds, with its error texts
 * (`time: invalid duration "x"`, `time: missing unit in duration "1"`,
 * `time: unknown unit "d" in duration "1d"`).
 */
export function parseGoDuration(text: string): number {
  const invalid = () => new GoDurationError(`time: invalid duration ${quote(text)}`);
  let s = text;
  let negative = false;
  if (s.startsWith("-") || s.startsWith("+")) {
    negative = s[0] === "-";
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") throw invalid();
  let total = 0n;
  while (s !== "") {
    const number = /^(\d*)(?:\.(\d*))?/.exec(s)!;
    const whole = number[1] ?? "";
    const fraction = number[2] ?? "";
    if (whole === "" && fraction === "") throw invalid();
    s = s.slice(number[0].length);
    const unitMatch = /^[^0-9.]*/.exec(s)!;
    const unit = unitMatch[0];
    if (unit === "") throw new GoDurationError(`time: missing unit in duration ${quote(text)}`);
    const scale = UNITS[unit];
    if (scale === undefined) {
      throw new GoDurationError(`time: unknown unit ${quote(unit)} in duration ${quote(text)}`);
    }
    s = s.slice(unit.length);
    let part = BigInt(whole || "0") * scale;
    if (fraction !== "") part += (BigInt(fraction) * scale) / 10n ** BigInt(fraction.length);
    total += part;
    if (total > INT64_MAX) throw invalid();
  }
  return Number(negative ? -total : total);
}

/**
 * A duration field of a request body: a Go duration string, or nanoseconds
 * (Go's float64 converted to a Duration, so truncated). An absent, null or
 * (when `emptyIsZero`) "" value is 0; anything else names the field.
 */
export function durationFromJson(value: unknown, field: string, emptyIsZero: boolean): number {
  if (value === undefined || value === null) return 0;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new GoDurationError(`${field}: ${value} is not a duration`);
    return Math.trunc(value);
  }
  if (typeof value === "string") {
    if (value === "" && emptyIsZero) return 0;
    try {
      return parseGoDuration(value);
    } catch (err) {
      if (err instanceof GoDurationError) throw new GoDurationError(`${field}: ${err.message}`);
      throw err;
    }
  }
  throw new GoDurationError(
    `${field}: a duration must be a string such as "1h" or nanoseconds, not ${JSON.stringify(value)}`,
  );
}

/** How Nomad's ACL objects print a duration: Go's Duration.String(), "" for zero. */
export function durationToJson(ns: number): string {
  return ns === 0 ? "" : goDuration(ns);
}
