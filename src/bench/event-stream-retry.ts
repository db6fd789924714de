/**
 * How the event-stream benchmark's subscribers retry a subscription the
 * server turned away with 429: as a real client would, waiting at least
 * what `Retry-After` asks (a lagging server sheds new streams with
 * `Retry-After: 1`, a full one with the subscriber cap's), backing off
 * when it asks nothing, a bounded number of times.
 */
export interface RetryPolicy {
  /** Attempts in all, the first included. */
  readonly tries: number;
  /** The wait before the first retry without `Retry-After`; doubled at each retry after it. */
  readonly baseMs: number;
  /** The longest wait: a server that asks for longer is given up on. */
  readonly maxMs: number;
}

/** Eight tries over at most about a minute: a busy machine sheds for seconds, not minutes. */
export const SUBSCRIBE_RETRY: RetryPolicy = { tries: 8, baseMs: 250, maxMs: 10_000 };

/**
 * Spread added to each wait (up to this fraction of it): the benchmark
 * opens subscribers a hundred at a time, and a hundred turned away at once
 * should not all come back in the same instant.
 */
const JITTER = 0.2;

/** `Retry-After` in milliseconds from `now`: delta-seconds or an HTTP-date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now: number = Date.now()): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  // A date is only a date with a weekday or month name in it: Date.parse reads "1.5" too.
  if (Number.isNaN(at) || !/[a-z]/i.test(text)) return undefined;
  return Math.max(0, at - now);
}

/**
 * The wait before retry number `retry` (1 for the first), or undefined to
 * give up: the tries are spent, or the server asks for longer than
 * `maxMs`. Never less than `Retry-After` asks.
 */
export function retryDelayMs(
  policy: RetryPolicy,
  retry: number,
  retryAfter: string | undefined,
  random: () => number = Math.random,
  now: number = Date.now(),
): number | undefined {
  if (retry >= policy.tries) return undefined;
  const asked = retryAfterMs(retryAfter, now);
  if (asked !== undefined && asked > policy.maxMs) return undefined;
  const wait = asked ?? Math.min(policy.maxMs, policy.baseMs * 2 ** (retry - 1));
  return Math.min(policy.maxMs, Math.ceil(wait * (1 + JITTER * random())));
}
