/**
 * Nomad's glob rules for ACL names (acl/acl.go with ryanuber/go-glob):
 * which globs match a name, and which one of them is the "closest".
 */

/**
 * ryanuber/go-glob's Glob: `*` matches any run of characters (none
 * included), nothing else is special. Each part between stars is found at
 * its leftmost place after the previous one; the last must end the subject.
 */
export function globMatch(pattern: string, subject: string): boolean {
  return compileGlob(pattern, undefined).matches(subject);
}

/** Go's len(): UTF-8 bytes. */
const byteLength = (s: string) => Buffer.byteLength(s, "utf8");

/**
 * Nomad's "character difference" between a name and a glob matching it:
 * len(name) - len(glob) + the number of stars, in bytes; the smaller, the
 * closer.
 */
export function globDifference(pattern: string, name: string): number {
  return byteLength(name) - compileGlob(pattern, undefined).weight;
}

/** Byte order of the UTF-8 forms: the order Nomad's radix trees walk their keys in. */
export function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** A glob split once, for the per-request matching. */
export interface CompiledGlob<T> {
  readonly pattern: string;
  readonly value: T;
  /** len(glob) - stars: the difference is len(name) minus this. */
  readonly weight: number;
  matches(subject: string): boolean;
}

export function compileGlob<T>(pattern: string, value: T): CompiledGlob<T> {
  const parts = pattern.split("*");
  const weight = byteLength(pattern) - (parts.length - 1);
  let matches: (subject: string) => boolean;
  if (pattern === "") matches = (s) => s === "";
  else if (pattern === "*") matches = () => true;
  else if (parts.length === 1) matches = (s) => s === pattern;
  else {
    const leading = pattern.startsWith("*");
    const trailing = pattern.endsWith("*");
    const end = parts.length - 1;
    const last = parts[end]!;
    matches = (subject) => {
      let from = 0;
      for (let i = 0; i < end; i++) {
        const part = parts[i]!;
        const idx = subject.indexOf(part, from);
        if (i === 0) {
          if (!leading && idx !== 0) return false;
        } else if (idx < 0) {
          return false;
        }
        from = idx + part.length;
      }
      return trailing || (subject.length - from >= last.length && subject.endsWith(last));
    };
  }
  return { pattern, value, weight, matches };
}

export interface GlobMatch<T> {
  readonly pattern: string;
  readonly difference: number;
  readonly value: T;
}

/**
 * Every glob of `globs` (in byte order of their patterns, as Nomad walks
 * them) that matches `name`, with its difference, in that order.
 */
export function matchingGlobs<T>(globs: readonly CompiledGlob<T>[], name: string): GlobMatch<T>[] {
  const out: GlobMatch<T>[] = [];
  let nameBytes: number | undefined;
  for (const g of globs) {
    if (!g.matches(name)) continue;
    nameBytes ??= byteLength(name);
    out.push({ pattern: g.pattern, difference: nameBytes - g.weight, value: g.value });
  }
  return out;
}

/**
 * The match Nomad picks: the first after `sort.SliceStable` with the
 * comparator `a.difference <= b.difference`. That comparator is not strict,
 * so the sort is not stable for ties: with up to 20 matches (one insertion
 * sort run) the winner is the LAST of the smallest difference in walk order,
 * i.e. the greatest pattern in byte order among those tied (for
 * `prod-api-x`, `*-api-x` and `prod-a*` both lie at distance 4, and
 * `prod-a*` wins). Beyond 20 matches Go's merge passes decide, so they are
 * replayed as Go runs them (on every list tried, that still gave the last
 * of the smallest).
 */
export function closestMatch<T>(matches: readonly GlobMatch<T>[]): GlobMatch<T> | undefined {
  const n = matches.length;
  if (n <= 1) return matches[0];
  if (n <= 20) {
    let best = 0;
    for (let i = 1; i < n; i++) if (matches[i]!.difference <= matches[best]!.difference) best = i;
    return matches[best];
  }
  const order = matches.map((_, i) => i);
  goStableSort(order, (i, j) => matches[order[i]!]!.difference <= matches[order[j]!]!.difference);
  return matches[order[0]!];
}

/**
 * Go's sort.Stable over `data` (insertion sort in blocks of 20, then
 * SymMerge), with the caller's `less(i, j)` on positions of `data`.
 */
export function goStableSort<T>(data: T[], less: (i: number, j: number) => boolean): void {
  const swap = (i: number, j: number) => {
    const t = data[i]!;
    data[i] = data[j]!;
    data[j] = t;
  };
  const insertionSort = (a: number, b: number) => {
    for (let i = a + 1; i < b; i++) {
      for (let j = i; j > a && less(j, j - 1); j--) swap(j, j - 1);
    }
  };
  const swapRange = (a: number, b: number, n: number) => {
    for (let i = 0; i < n; i++) swap(a + i, b + i);
  };
  const rotate = (a: number, m: number, b: number) => {
    let i = m - a;
    let j = b - m;
    while (i !== j) {
      if (i > j) {
        swapRange(m - i, m, j);
        i -= j;
      } else {
        swapRange(m - i, m + j - i, i);
        j -= i;
      }
    }
    swapRange(m - i, m, i);
  };
  const symMerge = (a: number, m: number, b: number): void => {
    if (m - a === 1) {
      let i = m;
      let j = b;
      while (i < j) {
        const h = (i + j) >>> 1;
        if (less(h, a)) i = h + 1;
        else j = h;
      }
      for (let k = a; k < i - 1; k++) swap(k, k + 1);
      return;
    }
    if (b - m === 1) {
      let i = a;
      let j = m;
      while (i < j) {
        const h = (i + j) >>> 1;
        if (!less(m, h)) i = h + 1;
        else j = h;
      }
      for (let k = m; k > i; k--) swap(k, k - 1);
      return;
    }
    const mid = (a + b) >>> 1;
    const n = mid + m;
    let start: number;
    let r: number;
    if (m > mid) {
      start = n - b;
      r = mid;
    } else {
      start = a;
      r = m;
    }
    const p = n - 1;
    while (start < r) {
      const c = (start + r) >>> 1;
      if (!less(p - c, c)) start = c + 1;
      else r = c;
    }
    const end = n - start;
    if (start < m && m < end) rotate(start, m, end);
    if (a < start && start < mid) symMerge(a, start, mid);
    if (mid < end && end < b) symMerge(mid, end, b);
  };

  const n = data.length;
  let blockSize = 20;
  let a = 0;
  let b = blockSize;
  while (b <= n) {
    insertionSort(a, b);
    a = b;
    b += blockSize;
  }
  insertionSort(a, n);
  while (blockSize < n) {
    a = 0;
    b = 2 * blockSize;
    while (b <= n) {
      symMerge(a, a + blockSize, b);
      a = b;
      b += 2 * blockSize;
    }
    const m = a + blockSize;
    if (m < n) symMerge(a, m, n);
    blockSize *= 2;
  }
}
