/**
 * Go's time.Time binary form (time.MarshalBinary), which Nomad's msgpack
 * handle writes for every time.Time (TimeNotBuiltin=true), and the RFC 3339
 * text Go's encoding/json writes for the same value.
 *
 * Binary: version (1, or 2 when the zone offset has seconds), seconds since
 * 0001-01-01T00:00:00Z as int64, nanoseconds as int32, zone offset in
 * minutes as int16 (-1 for UTC), version 2 only: the offset's seconds byte.
 */

const SECONDS_YEAR1_TO_UNIX = 62_135_596_800;
const TWO_POW_32 = 4_294_967_296;
/** Go's binary form of an RFC 3339 time, as Go's time.Parse would read it; undefined if not RFC 3339. */
export function goTimeBinaryFromRfc3339(text: string): Buffer | undefined {
  const out = Buffer.allocUnsafe(15);
  return writeGoTimeBinary(text, out, 0) ? out : undefined;
}

/**
 * Writes the 15 bytes of Go's binary form of an RFC 3339 time at
 * `out[at..]`; false (and nothing meaningful written) if `text` is not
 * RFC 3339 as Go's time.Parse reads it.
 */
export function writeGoTimeBinary(text: string, out: Uint8Array, at: number): boolean {
  const n = text.length;
  if (n < 20) return false;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  if (
    (year | month | day | hour | minute | second) < 0 ||
    text.charCodeAt(4) !== 45 || // -
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 84 || // T
    text.charCodeAt(13) !== 58 || // :
    text.charCodeAt(16) !== 58
  ) {
    return false;
  }
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false;
  if (hour > 23 || minute > 59 || second > 59) return false;
  let i = 19;
  let nanos = 0;
  if (text.charCodeAt(i) === 46) {
    // Go reads at most nine fraction digits and ignores the rest.
    let scale = 100_000_000;
    i++;
    const fractionStart = i;
    for (; i < n; i++) {
      const d = text.charCodeAt(i) - 48;
      if (d < 0 || d > 9) break;
      nanos += d * scale;
      scale /= 10;
    }
    if (i === fractionStart) return false;
    nanos = Math.floor(nanos);
  }
  let offsetMinutes = -1; // UTC
  let offsetSeconds = 0;
  const zone = text.charCodeAt(i);
  if (zone === 90 && i + 1 === n) {
    // Z
  } else if ((zone === 43 || zone === 45) && i + 6 === n && text.charCodeAt(i + 3) === 58) {
    const offHours = digits(text, i + 1, 2);
    const offMinutes = digits(text, i + 4, 2);
    if (offHours < 0 || offMinutes < 0 || offHours > 23 || offMinutes > 59) return false;
    // time.Parse keeps "+00:00" as a zone with offset 0, not as UTC: binary offset 0, not -1.
    offsetMinutes = (zone === 45 ? -1 : 1) * (offHours * 60 + offMinutes);
    offsetSeconds = offsetMinutes * 60;
  } else {
    return false;
  }
  const local = daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
  writeBinary(out, at, local - offsetSeconds + SECONDS_YEAR1_TO_UNIX, nanos, offsetMinutes);
  return true;
}

/** The number in `count` ASCII digits at `text[from..]`, or -1. */
function digits(text: string, from: number, count: number): number {
  let value = 0;
  for (let i = from; i < from + count; i++) {
    const d = text.charCodeAt(i) - 48;
    if (!(d >= 0 && d <= 9)) return -1;
    value = value * 10 + d;
  }
  return value;
}

/** Go's binary form of a JS Date (millisecond precision, UTC). */
export function goTimeBinaryFromDate(date: Date): Buffer {
  const ms = date.getTime();
  if (!Number.isFinite(ms)) throw new RangeError("invalid Date");
  const unixSeconds = Math.floor(ms / 1000);
  const out = Buffer.allocUnsafe(15);
  writeBinary(out, 0, unixSeconds + SECONDS_YEAR1_TO_UNIX, (ms - unixSeconds * 1000) * 1_000_000, -1);
  return out;
}

function writeBinary(
  out: Uint8Array,
  at: number,
  secondsSinceYear1: number,
  nanos: number,
  offsetMinutes: number,
): void {
  const hi = Math.floor(secondsSinceYear1 / TWO_POW_32);
  const lo = secondsSinceYear1 - hi * TWO_POW_32;
  out[at] = 1;
  out[at + 1] = hi >>> 24;
  out[at + 2] = (hi >>> 16) & 0xff;
  out[at + 3] = (hi >>> 8) & 0xff;
  out[at + 4] = hi & 0xff;
  out[at + 5] = lo >>> 24;
  out[at + 6] = (lo >>> 16) & 0xff;
  out[at + 7] = (lo >>> 8) & 0xff;
  out[at + 8] = lo & 0xff;
  out[at + 9] = nanos >>> 24;
  out[at + 10] = (nanos >>> 16) & 0xff;
  out[at + 11] = (nanos >>> 8) & 0xff;
  out[at + 12] = nanos & 0xff;
  out[at + 13] = (offsetMinutes >> 8) & 0xff;
  out[at + 14] = offsetMinutes & 0xff;
}

/**
 * The RFC 3339 text Go's encoding/json writes for the time in
 * `bytes[start, start+length)` (RFC3339Nano: trailing fraction zeros dropped,
 * "Z" for a zero offset, the offset's seconds dropped), or undefined when the
 * bytes are not Go time binary.
 */
export function rfc3339FromGoTimeBinary(
  bytes: Uint8Array,
  start: number,
  length: number,
): string | undefined {
  const version = bytes[start];
  if (!((version === 1 && length === 15) || (version === 2 && length === 16))) return undefined;
  const b = bytes;
  const p = start;
  const hi = ((b[p + 1]! << 24) | (b[p + 2]! << 16) | (b[p + 3]! << 8) | b[p + 4]!) >> 0;
  const lo = ((b[p + 5]! << 24) | (b[p + 6]! << 16) | (b[p + 7]! << 8) | b[p + 8]!) >>> 0;
  const seconds = hi * TWO_POW_32 + lo;
  const nanos = (b[p + 9]! << 24) | (b[p + 10]! << 16) | (b[p + 11]! << 8) | b[p + 12]!;
  let offset = (((b[p + 13]! << 24) | (b[p + 14]! << 16)) >> 16) * 60;
  // As time.UnmarshalBinary: the extra byte is read unsigned.
  if (version === 2) offset += b[p + 15]!;
  if (offset === -60) offset = 0; // UTC
  const local = seconds - SECONDS_YEAR1_TO_UNIX + offset;
  const days = Math.floor(local / 86_400);
  const secOfDay = local - days * 86_400;
  civilFromDays(days);
  let text =
    formatYear(civilYear) +
    "-" +
    pad2(civilMonth) +
    "-" +
    pad2(civilDay) +
    "T" +
    pad2(Math.floor(secOfDay / 3600)) +
    ":" +
    pad2(Math.floor(secOfDay / 60) % 60) +
    ":" +
    pad2(secOfDay % 60);
  if (nanos !== 0) text += fraction(nanos);
  if (offset === 0) return text + "Z";
  // Go formats whole minutes of the offset, truncated toward zero.
  let zoneMinutes = Math.trunc(offset / 60);
  let sign = "+";
  if (zoneMinutes < 0) {
    sign = "-";
    zoneMinutes = -zoneMinutes;
  }
  return text + sign + pad2(Math.floor(zoneMinutes / 60)) + ":" + pad2(zoneMinutes % 60);
}

/** ".123" for 123000000 ns: nine digits without trailing zeros, as RFC3339Nano. */
function fraction(nanos: number): string {
  let digitsLeft = 9;
  let n = nanos;
  while (n % 10 === 0) {
    n /= 10;
    digitsLeft--;
  }
  const text = String(n);
  return "." + (text.length < digitsLeft ? "0".repeat(digitsLeft - text.length) + text : text);
}

/** msgpack's timestamp extension (type -1, never written by Nomad's handle) as RFC 3339 UTC. */
export function rfc3339FromMsgpackTimestamp(bytes: Uint8Array, start: number, length: number): string {
  const view = new DataView(bytes.buffer, bytes.byteOffset + start, length);
  let seconds: number;
  let nanos = 0;
  if (length === 4) seconds = view.getUint32(0);
  else if (length === 8) {
    const hi = view.getUint32(0);
    nanos = Math.floor(hi / 4);
    seconds = (hi % 4) * TWO_POW_32 + view.getUint32(4);
  } else if (length === 12) {
    nanos = view.getUint32(0);
    seconds = view.getInt32(4) * TWO_POW_32 + view.getUint32(8);
  } else throw new RangeError(`msgpack timestamp of ${length} bytes`);
  const binary = Buffer.allocUnsafe(15);
  writeBinary(binary, 0, seconds + SECONDS_YEAR1_TO_UNIX, nanos, -1);
  return rfc3339FromGoTimeBinary(binary, 0, 15)!;
}

function pad2(n: number): string {
  return n < 10 ? "0" + n : String(n);
}

function formatYear(year: number): string {
  return year >= 0 && year <= 9999 ? String(year).padStart(4, "0") : String(year);
}

function isLeap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeap(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

// Proleptic Gregorian calendar day numbers relative to 1970-01-01
// (H. Hinnant's days_from_civil / civil_from_days), valid for any year.
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

let civilYear = 0;
let civilMonth = 0;
let civilDay = 0;

/** Sets civilYear, civilMonth, civilDay (no array per call: this runs for every time decoded). */
function civilFromDays(days: number): void {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  civilYear = yoe + era * 400 + (month <= 2 ? 1 : 0);
  civilMonth = month;
  civilDay = day;
}
