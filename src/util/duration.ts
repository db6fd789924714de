const UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};
const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;

/**
 * Parses a Go duration ("300ms", "1m30s", "2h") into milliseconds, as Nomad's
 * config, flags and `?wait=` accept. Returns undefined when it is not one.
 */
export function parseDuration(text: string): number | undefined {
  let s = text.trim();
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    sign = s.startsWith("-") ? -1 : 1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") return undefined;
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < s.length) {
    const start = PART.lastIndex;
    const m = PART.exec(s);
    if (!m || m.index !== start) return undefined;
    total += Number(m[1]) * UNITS[m[2]!]!;
  }
  return sign * total;
}

/** Formats milliseconds as a Go duration string, the way Nomad prints TTLs. */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  const parts: string[] = [];
  let rest = Math.abs(ms);
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  if (h) parts.push(`${h}h`);
  if (h || m) parts.push(`${m}m`);
  if (rest || parts.length === 0) parts.push(rest >= 1000 || parts.length ? `${rest / 1000}s` : `${rest}ms`);
  return (ms < 0 ? "-" : "") + parts.join("");
}
