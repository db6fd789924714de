/**
 * The few operations of Go's time package that cron evaluation needs, on
 * instants (Unix milliseconds) seen in an IANA time zone: the wall clock
 * of an instant, the instant of a wall clock (time.Date, with Go's
 * normalization of out-of-range fields and its choice at DST gaps and
 * overlaps), and RFC 3339 printing as Go's JSON prints a time.Time.
 * Time zone data comes from the runtime's Intl.
 */

export interface WallClock {
  readonly year: number;
  /** 1 to 12. */
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
  /** 0 is Sunday. */
  readonly weekday: number;
}

export const UTC = "UTC";

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
      era: "short",
    });
    formatters.set(zone, f);
  }
  return f;
}

/** Whether the runtime knows the zone (Go's time.LoadLocation succeeding). */
export function isKnownZone(zone: string): boolean {
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}

/** The zone's offset from UTC at `ms`, in seconds (Go's t.Zone()). */
export function offsetAt(ms: number, zone: string): number {
  if (zone === UTC) return 0;
  const seconds = Math.floor(ms / 1000) * 1000;
  const parts: Record<string, string> = {};
  for (const p of formatter(zone).formatToParts(new Date(seconds))) parts[p.type] = p.value;
  let year = Number(parts.year);
  if (parts.era === "BC" || parts.era === "B") year = 1 - year;
  const asUTC = utcMs(
    year,
    Number(parts.month),
    Number(parts.day),
    Number(parts.hour),
    Number(parts.minute),
    Number(parts.second),
  );
  return Math.round((asUTC - seconds) / 1000);
}

/** The wall clock of an instant in a zone. */
export function wallClock(ms: number, zone: string): WallClock {
  const d = new Date(ms + offsetAt(ms, zone) * 1000);
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
    weekday: d.getUTCDay(),
  };
}

/** Date.UTC for any year (Date.UTC maps years 0 to 99 to 1900 to 1999). */
function utcMs(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, 0);
  return d.getTime();
}

/**
 * Go's time.Date(year, month, day, hour, min, sec, 0, zone): fields out of
 * range carry over (month 13 is January of the next year); a wall clock
 * the zone skips or repeats gets the offset Go picks: the one in effect
 * just before the transition when it is read as UTC, as Go's lookup does.
 */
export function goDate(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  zone: string,
): number {
  const unix = utcMs(year, month, day, hour, minute, second);
  if (zone === UTC) return unix;
  let offset = offsetAt(unix, zone);
  if (offset !== 0) {
    // Go first looks the wall clock up as if it were UTC, then checks that
    // the instant it gives still has that offset; if not, it takes the
    // offset of that instant.
    const utc = unix - offset * 1000;
    const there = offsetAt(utc, zone);
    if (there !== offset) offset = there;
  }
  return unix - offset * 1000;
}

/** Go's time.Time JSON (RFC 3339 with the zone's offset, "Z" when it is 0); whole seconds here. */
export function formatRFC3339(ms: number, zone: string): string {
  const w = wallClock(ms, zone);
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  const date = `${pad(w.year, 4)}-${pad(w.month)}-${pad(w.day)}T${pad(w.hour)}:${pad(w.minute)}:${pad(w.second)}`;
  const offset = offsetAt(ms, zone);
  if (offset === 0) return `${date}Z`;
  const abs = Math.abs(offset);
  return `${date}${offset < 0 ? "-" : "+"}${pad(Math.floor(abs / 3600))}:${pad(Math.floor(abs / 60) % 60)}`;
}
