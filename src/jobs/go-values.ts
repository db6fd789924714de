/**
 * Just enough of Go's type system to diff jobs as Nomad does. Nomad's job
 * diff walks Go structs with reflection (helper/flatmap): which fields are
 * "primitive", what a missing field prints as ("" for a string, "0" for an
 * int, "false" for a bool), which pointers are skipped, how a float64 of a
 * task's config prints. A job here is JSON, which carries none of that, so
 * each struct Nomad diffs is described (job-diff-types.ts) and a JSON value
 * is first turned into the Go value Nomad would hold (`toGo`).
 */

export type GoType =
  | { readonly kind: "string" | "int" | "bool" | "float" }
  | { readonly kind: "ptr"; readonly elem: GoType }
  | { readonly kind: "struct"; readonly fields: readonly (readonly [string, GoType])[] }
  | { readonly kind: "map"; readonly elem: GoType }
  | { readonly kind: "slice"; readonly elem: GoType }
  /** interface{}: holds a JSON value as Go's decoder makes it (numbers are float64). */
  | { readonly kind: "any" };

export type StructType = Extract<GoType, { kind: "struct" }>;

export const STRING: GoType = { kind: "string" };
export const INT: GoType = { kind: "int" };
export const BOOL: GoType = { kind: "bool" };
export const ANY: GoType = { kind: "any" };
export const ptr = (elem: GoType): GoType => ({ kind: "ptr", elem });
export const slice = (elem: GoType): GoType => ({ kind: "slice", elem });
export const map = (elem: GoType): GoType => ({ kind: "map", elem });
export const struct = (fields: Readonly<Record<string, GoType>>): StructType => ({
  kind: "struct",
  fields: Object.entries(fields),
});

/** A Go value as JSON-like data: structs are objects with every field, nil is null. */
export type GoValue = null | string | number | boolean | readonly GoValue[] | GoObject;
export interface GoObject {
  readonly [field: string]: GoValue;
}

/**
 * The Go value Nomad would hold after decoding `json` into `type`: every
 * struct field present (zero values filled in), numbers of int fields
 * truncated. Empty slices and maps become nil: Nomad's api-to-structs
 * conversion drops them the same way, and `reflect.DeepEqual` would
 * otherwise tell `[]` from `null` where the job did not change.
 */
export function toGo(json: unknown, type: GoType): GoValue {
  switch (type.kind) {
    case "string":
      return typeof json === "string" ? json : "";
    case "int":
      return typeof json === "number" && Number.isFinite(json) ? Math.trunc(json) : 0;
    case "float":
      return typeof json === "number" ? json : 0;
    case "bool":
      return json === true;
    case "ptr":
      return json === null || json === undefined ? null : toGo(json, type.elem);
    case "struct": {
      const o = isObject(json) ? json : {};
      const out: Record<string, GoValue> = {};
      for (const [name, t] of type.fields) out[name] = toGo(Object.hasOwn(o, name) ? o[name] : undefined, t);
      return out;
    }
    case "map": {
      if (!isObject(json)) return null;
      const entries = Object.entries(json).filter(([, v]) => v !== undefined);
      if (entries.length === 0) return null;
      return Object.fromEntries(entries.map(([k, v]) => [k, toGo(v, type.elem)]));
    }
    case "slice":
      return Array.isArray(json) && json.length > 0 ? json.map((v) => toGo(v, type.elem)) : null;
    case "any":
      return json === undefined ? null : (json as GoValue);
  }
}

const zeros = new WeakMap<GoType, GoValue>();

/** The zero value of a type (shared: Go values are never changed in place). */
export function zeroOf(type: GoType): GoValue {
  let z = zeros.get(type);
  if (z === undefined) {
    z = toGo(undefined, type);
    zeros.set(type, z);
  }
  return z;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Reads a field of a struct value (fields of a `toGo` struct are always present). */
export function field(v: GoValue | undefined, name: string): GoValue {
  if (v === null || v === undefined || typeof v !== "object" || Array.isArray(v)) return null;
  return Object.hasOwn(v, name) ? ((v as GoObject)[name] ?? null) : null;
}
export const str = (v: GoValue | undefined, name: string): string => {
  const f = field(v, name);
  return typeof f === "string" ? f : "";
};
export const num = (v: GoValue | undefined, name: string): number => {
  const f = field(v, name);
  return typeof f === "number" ? f : 0;
};
export const list = (v: GoValue | undefined, name: string): readonly GoValue[] => {
  const f = field(v, name);
  return Array.isArray(f) ? f : [];
};
export const strings = (v: GoValue | undefined, name: string): string[] =>
  list(v, name).filter((s): s is string => typeof s === "string");

/**
 * Nomad's flatmap.Flatten: the value as a flat map from field path to its
 * printed value. With `primitiveOnly`, once inside a struct, pointers,
 * nested structs, slices and interface values are skipped, but maps are
 * still walked (so `Meta[foo]` is a field of the job). `undefined` is Go's
 * untyped nil, for which Flatten answers a nil map.
 */
export function flatten(
  value: GoValue | undefined,
  type: GoType,
  filter: readonly string[] | null,
  primitiveOnly: boolean,
): Record<string, string> | null {
  if (value === undefined) return null;
  // No prototype: a map key such as "__proto__" or "constructor" is a key like any other.
  const out: Record<string, string> = Object.create(null);
  walk("", value, type, primitiveOnly, false, out);
  for (const f of filter ?? []) delete out[f];
  return out;
}

function walk(
  prefix: string,
  v: GoValue,
  type: GoType,
  primitiveOnly: boolean,
  enteredStruct: boolean,
  out: Record<string, string>,
): void {
  switch (type.kind) {
    case "string":
      out[prefix] = typeof v === "string" ? v : "";
      return;
    case "int":
      out[prefix] = goInt(typeof v === "number" ? v : 0);
      return;
    case "float":
      out[prefix] = goFloat(typeof v === "number" ? v : 0);
      return;
    case "bool":
      out[prefix] = v === true ? "true" : "false";
      return;
    case "ptr":
      if (primitiveOnly && enteredStruct) return;
      // A nil pointer prints "nil" (and so does the invalid value it points to).
      if (v === null) out[prefix] = "nil";
      else walk(prefix, v, type.elem, primitiveOnly, enteredStruct, out);
      return;
    case "map":
      if (v === null || typeof v !== "object" || Array.isArray(v)) return;
      for (const [k, x] of Object.entries(v as GoObject))
        walk(subKey(prefix, k), x, type.elem, primitiveOnly, enteredStruct, out);
      return;
    case "struct":
      if (primitiveOnly && enteredStruct) return;
      // Only a pointer's struct can be absent: it prints as a nil pointer.
      if (v === null) {
        out[prefix] = "nil";
        return;
      }
      for (const [name, t] of type.fields) {
        const x = field(v, name);
        // Go unwraps a non-nil interface field before walking it.
        if (t.kind === "any" && x !== null) walkDynamic(subField(prefix, name), x, primitiveOnly, out);
        else walk(subField(prefix, name), x, t, primitiveOnly, true, out);
      }
      return;
    case "slice":
      if (primitiveOnly) return;
      if (v === null || !Array.isArray(v)) {
        out[prefix] = "nil";
        return;
      }
      for (const [i, x] of v.entries())
        walk(`${prefix}[${i}]`, x, type.elem, primitiveOnly, enteredStruct, out);
      return;
    case "any":
      // A map or slice element of interface type.
      if (primitiveOnly) return;
      if (v === null) out[prefix] = "nil";
      else walkDynamic(prefix, v, primitiveOnly, out);
      return;
  }
}

/** A value inside an interface{}: what encoding/json decoded (float64, string, bool, []any, map[string]any). */
function walkDynamic(prefix: string, v: GoValue, primitiveOnly: boolean, out: Record<string, string>): void {
  if (typeof v === "number") out[prefix] = goFloat(v);
  else if (typeof v === "string") out[prefix] = v;
  else if (typeof v === "boolean") out[prefix] = v ? "true" : "false";
  else if (Array.isArray(v)) walk(prefix, v, slice(ANY), primitiveOnly, true, out);
  else if (v !== null) walk(prefix, v, map(ANY), primitiveOnly, true, out);
}

const subField = (prefix: string, name: string) => (prefix === "" ? name : `${prefix}.${name}`);
const subKey = (prefix: string, key: string) => (prefix === "" ? key : `${prefix}[${key}]`);

/** Go's %v of an integer (exact beyond 2^53 as far as the number is). */
export function goInt(n: number): string {
  return Number.isSafeInteger(n) ? String(n) : BigInt(Math.trunc(n)).toString();
}

/**
 * Go's %v of a float64 (strconv 'g' with the shortest precision): exponent
 * form when the exponent is below -4 or at least 6, so 1000000 is "1e+06".
 */
export function goFloat(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (n === Number.POSITIVE_INFINITY) return "+Inf";
  if (n === Number.NEGATIVE_INFINITY) return "-Inf";
  if (n === 0) return Object.is(n, -0) ? "-0" : "0";
  const [mantissa, e] = n.toExponential().split("e") as [string, string];
  const exp = Number(e);
  if (exp < -4 || exp >= 6) {
    const abs = Math.abs(exp);
    return `${mantissa}e${exp < 0 ? "-" : "+"}${abs < 10 ? "0" : ""}${abs}`;
  }
  // Within that range JavaScript prints the same shortest digits without an exponent.
  return String(n);
}

/** Go's time.Duration.String(): "1h2m3.5s", "1.5ms", "0s". */
export function goDuration(ns: number): string {
  if (ns === 0) return "0s";
  const neg = ns < 0;
  let u = BigInt(Math.abs(Math.trunc(ns)));
  const sign = neg ? "-" : "";
  if (u < 1000000000n) {
    // Under a second: the largest unit that keeps an integer part.
    const [unit, scale] =
      u < 1000n ? ["ns", 1n] : u < 1000000n ? ["µs", 1000n] : (["ms", 1000000n] as [string, bigint]);
    return `${sign}${fraction(u, scale)}${unit}`;
  }
  let out = `${fraction(u % 60000000000n, 1000000000n)}s`;
  u /= 60000000000n;
  if (u > 0n) {
    out = `${u % 60n}m${out}`;
    u /= 60n;
    if (u > 0n) out = `${u}h${out}`;
  }
  return sign + out;
}

function fraction(v: bigint, scale: bigint): string {
  const whole = v / scale;
  let frac = (v % scale).toString().padStart(scale.toString().length - 1, "0");
  frac = frac.replace(/0+$/, "");
  return frac === "" ? whole.toString() : `${whole}.${frac}`;
}

/** reflect.DeepEqual of two `toGo` values. */
export function deepEqual(a: GoValue | undefined, b: GoValue | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a === null || b === null) return false;
  if (typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => deepEqual(x, b[i]));
  }
  const ao = a as GoObject;
  const bo = b as GoObject;
  const keys = Object.keys(ao);
  if (keys.length !== Object.keys(bo).length) return false;
  return keys.every((k) => Object.hasOwn(bo, k) && deepEqual(ao[k], bo[k]));
}

/**
 * A key equal for equal values: what Nomad's hashstructure.Hash is used for
 * (matching the elements of two sets), without its collisions.
 */
export function valueKey(v: GoValue): string {
  if (Array.isArray(v)) return `[${v.map(valueKey).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as GoObject;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${valueKey(o[k] ?? null)}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}
