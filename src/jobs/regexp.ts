import type { GoRegexp } from "../query/filter/go-regexp.ts";
import { compileGoRegexp } from "../query/filter/go-regexp.ts";

const MAX_CACHED = 1024;
const cache = new Map<string, GoRegexp>();

/**
 * A `regexp` constraint's RTarget as Go (RE2) compiles it: linear-time
 * matching, unanchored like regexp.MatchString. Throws GoRegexpError, whose
 * message is Go's and names the pattern, where Go would not compile it.
 */
export function compileRegexp(pattern: string): GoRegexp {
  let re = cache.get(pattern);
  if (!re) {
    re = compileGoRegexp(pattern);
    // Constraints repeat across evaluations and nodes; a bounded cache keeps
    // them compiled without growing with every pattern ever submitted.
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(pattern, re);
  }
  return re;
}
