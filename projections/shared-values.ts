/**
 * A client's status update repeats what the stored row already holds: every
 * update carries the whole TaskStates tree, each task's events from the
 * first, decoded anew from the record. Stored as decoded, the row's events
 * were all new objects at every update, each kept until the next update of
 * the allocation, seconds later in a burst: long enough to survive two
 * scavenges, so every one was copied twice and promoted, then dropped.
 *
 * `shareEqual(stored, reported)` gives the reported value with every part
 * equal to the stored one's (same keys in the same order, same values)
 * replaced by the stored part: the reported copy is then garbage at once,
 * in the young generation. The result is equal to `reported` as plain data
 * (its msgpack bytes and its JSON are the same, key order included), so
 * the state, its hash and every answer are unchanged. When the whole value
 * is equal it is the stored one itself, by reference.
 *
 * It writes the shared parts into `reported` in place: decoded log data,
 * used by nobody else, and equal after the write. A frozen value is left as
 * it is (only its equality is told).
 */
export function shareEqual<T>(stored: unknown, reported: T): T {
  return share(stored, reported, 0) as T;
}

/** Deeper than any task state: past it, values are compared by reference only. */
const MAX_DEPTH = 16;

function share(stored: unknown, reported: unknown, depth: number): unknown {
  // Equal primitives, and equal strings as well: the stored string is kept.
  // Object.is: 0 and -0 are different msgpack bytes.
  if (Object.is(stored, reported)) return stored;
  if (typeof stored !== "object" || typeof reported !== "object" || stored === null || reported === null)
    return reported;
  if (depth >= MAX_DEPTH) return reported;
  const writable = !Object.isFrozen(reported);
  if (Array.isArray(reported)) {
    if (!Array.isArray(stored)) return reported;
    let same = stored.length === reported.length;
    for (let i = 0; i < reported.length; i++) {
      const now: unknown = reported[i];
      if (i >= stored.length) {
        same = false;
        continue;
      }
      const kept = share(stored[i], now, depth + 1);
      if (!Object.is(kept, stored[i])) same = false;
      else if (kept !== now && writable) reported[i] = kept;
    }
    return same ? stored : reported;
  }
  if (Array.isArray(stored) || Object.getPrototypeOf(reported) !== Object.getPrototypeOf(stored))
    return reported;
  const was = stored as Record<string, unknown>;
  const now = reported as Record<string, unknown>;
  // Told before the values: the check uses a scratch list the values' own checks would overwrite.
  let same = sameKeyOrder(was, now);
  for (const key in now) {
    if (!Object.hasOwn(now, key)) continue;
    if (!Object.hasOwn(was, key)) {
      same = false;
      continue;
    }
    const value = now[key];
    const kept = share(was[key], value, depth + 1);
    if (!Object.is(kept, was[key])) same = false;
    else if (kept !== value && writable) now[key] = kept;
  }
  return same ? stored : reported;
}

/** `a`'s keys while they are compared with `b`'s: Object.keys would make two arrays an object. */
const scratch: string[] = [];

/** The same own keys in the same order: what decides the bytes and the JSON of an equal object. */
function sameKeyOrder(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  let n = 0;
  for (const key in a) if (Object.hasOwn(a, key)) scratch[n++] = key;
  let i = 0;
  for (const key in b) {
    if (!Object.hasOwn(b, key)) continue;
    if (i >= n || scratch[i] !== key) return false;
    i++;
  }
  return i === n;
}
