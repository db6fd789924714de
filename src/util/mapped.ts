/**
 * `list.map(fn)`, pushed into an array literal. The builtin `map` returns
 * a packed array, the `map` TurboFan inlines a holey one, so code that
 * optimized on one kind deoptimizes ("wrong map") on the other as soon as
 * its caller is optimized: in a cold server, once for each such list on
 * the write path (the job's lists, the envelopes handed to the log). A
 * literal's array keeps one hidden class in every tier.
 */
export function mapped<T, U>(list: readonly T[], fn: (item: T, i: number) => U): U[] {
  const out: U[] = [];
  for (let i = 0; i < list.length; i++) out.push(fn(list[i]!, i));
  return out;
}
