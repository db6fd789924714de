/** Whether `o`'s own enumerable keys are `keys`, in that order (for…in walks V8's enum cache without allocating). */
export function hasKeysInOrder(o: object, keys: readonly string[]): boolean {
  let i = 0;
  for (const k in o) {
    if (k !== keys[i]) return false;
    i++;
  }
  return i === keys.length;
}
