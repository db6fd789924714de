/**
 * A small seeded PRNG (xmur3 string hash feeding sfc32): the node order of an
 * evaluation is random but the same every time that evaluation is computed,
 * so a run can be reproduced from its log.
 */
export function seededRandom(seed: string): () => number {
  let h = 1779033703 ^ seed.length;
  for (let i = 0; i < seed.length; i++) {
    h = Math.imul(h ^ seed.charCodeAt(i), 3432918353);
    h = (h << 13) | (h >>> 19);
  }
  h = xmur3Next(h);
  let a = h >>> 0;
  h = xmur3Next(h);
  let b = h >>> 0;
  h = xmur3Next(h);
  let c = h >>> 0;
  h = xmur3Next(h);
  let d = h >>> 0;
  return () => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
}

/**
 * xmur3's next hash. A module function, not a closure per seed: under tsx
 * (esbuild's keepNames) a named closure costs a defineProperty of its name
 * (`__name`) each time it is made, here once per scheduling pass.
 */
function xmur3Next(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 2246822507);
  h = Math.imul(h ^ (h >>> 13), 3266489909);
  return h ^ (h >>> 16);
}

/**
 * The items of `items` in a random order drawn lazily (a sparse
 * Fisher–Yates): taking k items costs O(k) whatever the list's length, so a
 * placement that scores a handful of nodes does not pay for shuffling
 * thousands.
 */
export class LazyShuffle<T> {
  private readonly swapped = new Map<number, number>();
  private drawn = 0;
  private readonly order: number[] = [];

  constructor(
    private readonly items: readonly T[],
    private readonly random: () => number,
  ) {}

  get length(): number {
    return this.items.length;
  }

  /** The i-th item of the shuffled order (i < length), drawing as far as needed. */
  at(i: number): T {
    while (this.drawn <= i) {
      const n = this.items.length;
      const k = this.drawn;
      const j = k + Math.floor(this.random() * (n - k));
      const atJ = this.swapped.get(j) ?? j;
      const atK = this.swapped.get(k) ?? k;
      this.swapped.set(j, atK);
      this.swapped.delete(k);
      this.order.push(atJ);
      this.drawn++;
    }
    return this.items[this.order[i]!]!;
  }
}
