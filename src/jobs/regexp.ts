import { translateRe2 } from "../query/filter/re2.ts";

const cache = new Map<string, RegExp>();

/** A Go (RE2) regular expression as a JS RegExp; throws when Go would not compile it. */
export function compileRegexp(pattern: string): RegExp {
  let re = cache.get(pattern);
  if (!re) {
    const t = translateRe2(pattern);
    re = new RegExp(t.source, t.flags);
    // Constraints repeat across evaluations; a bounded cache keeps them compiled.
    if (cache.size > 1024) cache.clear();
    cache.set(pattern, re);
  }
  return re;
}
