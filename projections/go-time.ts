/**
 * Unix milliseconds as Go's time.Time marshals to JSON (RFC 3339 with
 * fractional seconds, trailing zeros dropped), so timestamps read the same as
 * Nomad's. Used at apply with the event's own time, never the clock.
 */
export function goTime(ms: number): string {
  const iso = new Date(ms).toISOString();
  const m = /\.(\d*?)0*Z$/.exec(iso);
  if (!m) return iso;
  return `${iso.slice(0, m.index)}${m[1] ? `.${m[1]}` : ""}Z`;
}
