/**
 * go-multierror's list format, which Nomad's validation errors are rendered
 * in: nested lists keep their own format inside a wrapping message.
 */
export function formatErrors(errors: readonly string[]): string {
  if (errors.length === 1) return `1 error occurred:\n\t* ${errors[0]}\n\n`;
  return `${errors.length} errors occurred:\n\t${errors.map((e) => `* ${e}`).join("\n\t")}\n\n`;
}

/** Go's time.Duration String() for a value in nanoseconds ("1m30s", "500ms", "0s"). */
export function goDuration(ns: number): string {
  if (ns === 0) return "0s";
  const sign = ns < 0 ? "-" : "";
  let rest = Math.abs(ns);
  if (rest < 1e3) return `${sign}${rest}ns`;
  if (rest < 1e6) return `${sign}${trim(rest / 1e3)}µs`;
  if (rest < 1e9) return `${sign}${trim(rest / 1e6)}ms`;
  const h = Math.floor(rest / 3.6e12);
  rest -= h * 3.6e12;
  const m = Math.floor(rest / 6e10);
  rest -= m * 6e10;
  const s = trim(rest / 1e9);
  if (h > 0) return `${sign}${h}h${m}m${s}s`;
  if (m > 0) return `${sign}${m}m${s}s`;
  return `${sign}${s}s`;
}

function trim(n: number): string {
  return String(Number(n.toFixed(9)));
}
