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
  // Plain objects only (what msgpack decodes to): their for-in gives their own keys, in order.
  if (
    Object.getPrototypeOf(reported) !== Object.prototype ||
    Object.getPrototypeOf(stored) !== Object.prototype
  )
    return reported;
  const was = stored as Record<string, unknown>;
  const now = reported as Record<string, unknown>;
  // The stored object's keys, in order, in the scratch list above what
  // the callers hold there (Object.keys would make an array an object).
  const base = top;
  let n = 0;
  for (const key in was) scratch[base + n++] = key;
  top = base + n;
  let same = true;
  let i = 0;
  for (const key in now) {
    // The same key at the same place, or (keys in another order) one it has elsewhere.
    if (i >= n || scratch[base + i] !== key) {
      same = false;
      if (!Object.hasOwn(was, key)) {
        i++;
        continue;
      }
    }
    i++;
    const value = now[key];
    const old = was[key];
    if (old === value) {
      // An equal string may be another copy: the stored one is kept.
      if (typeof value === "string") {
        if (writable) now[key] = old;
      } else if (value === 0 && !Object.is(old, value)) same = false;
      continue;
    }
    if (typeof value !== "object" || typeof old !== "object" || value === null || old === null) {
      same = false;
      continue;
    }
    const kept = share(old, value, depth + 1);
    if (kept !== old) same = false;
    else if (writable) now[key] = kept;
  }
  top = base;
  return same && i === n ? stored : reported;
}

/** Keys of the objects being compared, a slice for each level (see `top`). */
const scratch: string[] = [];
/** Where the next level's keys go in `scratch`. */
let top = 0;
