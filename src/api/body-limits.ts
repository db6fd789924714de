/**
 * How large and how deep a request body may be. Every body is parsed,
 * validated, canonicalized and encoded into the log by recursive code on the
 * event loop that heartbeats share, so both bounds are checked before any of
 * that runs.
 */

/** The default for routes not listed below: every other body Nomad takes is a small struct. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/**
 * Bodies that legitimately grow with the cluster. Job specs carry templates
 * and driver config (Nomad's own job-size limit is the Raft entry's, a few
 * MiB); client RPCs batch a node's allocation updates.
 */
const BODY_LIMITS: readonly (readonly [RegExp, number])[] = [
  [/^\/v1\/rpc\//, 32 * 1024 * 1024],
  [/^\/v1\/jobs?(\/|$)/, 8 * 1024 * 1024],
];

export function bodyLimitFor(url: string): number {
  for (const [pattern, limit] of BODY_LIMITS) if (pattern.test(url)) return limit;
  return DEFAULT_BODY_LIMIT;
}

/**
 * Deeper than any Nomad struct nests, including user-shaped driver config
 * (Job > TaskGroups > Tasks > Config > a few levels of maps and lists).
 */
export const MAX_BODY_DEPTH = 128;

/**
 * The deepest nesting of `[`/`{` in JSON text, counted in one linear pass that
 * skips strings; stops early once `max` is exceeded. Invalid JSON is left to
 * JSON.parse to name.
 */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return false;
}

/** The same bound for an already decoded value (msgpack bodies), walked without recursion. */
export function valueDepthExceeds(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object" || ArrayBuffer.isView(v)) continue;
    if (depth + 1 > max) return true;
    const children = v instanceof Map ? [...v.values()] : Object.values(v);
    for (const child of children) stack.push([child, depth + 1]);
  }
  return false;
}
