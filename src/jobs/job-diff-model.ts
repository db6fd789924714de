import {
  ANY,
  deepEqual,
  flatten,
  type GoType,
  type GoValue,
  list,
  map,
  str,
  valueKey,
  zeroOf,
} from "./go-values.ts";
import { AFFINITY, CONSTRAINT } from "./job-diff-types.ts";

/**
 * The building blocks of Nomad's job diff (nomad/structs/diff.go, v1.6.1):
 * the diff types as its JSON shows them, and the generic diffs of flat
 * fields, string sets and sets of primitive objects. `null` stands for Go's
 * nil slice, as in Nomad's JSON (a diff with no fields has `Fields: null`).
 */

export type DiffType = "None" | "Added" | "Deleted" | "Edited";

export interface FieldDiff {
  Type: DiffType;
  Name: string;
  Old: string;
  New: string;
  Annotations: string[] | null;
}

export interface ObjectDiff {
  Type: DiffType;
  Name: string;
  Fields: FieldDiff[] | null;
  Objects: ObjectDiff[] | null;
}

/** Go's append on a possibly nil slice: nothing appended leaves nil. */
export function append<T>(list: T[] | null, ...items: readonly T[]): T[] | null {
  if (items.length === 0) return list;
  if (!list) return [...items];
  list.push(...items);
  return list;
}

/** DiffType.Less: Edited sorts before Added, before Deleted, before None. */
function typeLess(d: DiffType, other: DiffType): boolean {
  if (d === other) return false;
  for (const t of ["Edited", "Added", "Deleted"] as const) {
    if (d === t) return true;
    if (other === t) return false;
  }
  return true;
}

/** reflect.DeepEqual of two field diffs. */
function sameField(a: FieldDiff | null, b: FieldDiff | null): boolean {
  if (a === b) return true;
  if (a === null || b === null) return false;
  if (a.Type !== b.Type || a.Name !== b.Name || a.Old !== b.Old || a.New !== b.New) return false;
  const x = a.Annotations;
  const y = b.Annotations;
  return x === y || (x !== null && y !== null && x.length === y.length && x.every((v, i) => v === y[i]));
}

/** reflect.DeepEqual of two object diffs. */
function sameObject(a: ObjectDiff | null, b: ObjectDiff | null): boolean {
  if (a === b) return true;
  if (a === null || b === null || a.Type !== b.Type || a.Name !== b.Name) return false;
  return sameList(a.Fields, b.Fields, sameField) && sameList(a.Objects, b.Objects, sameObject);
}

function sameList<T>(a: T[] | null, b: T[] | null, eq: (x: T, y: T) => boolean): boolean {
  if (a === b) return true;
  if (a === null || b === null || a.length !== b.length) return false;
  return a.every((x, i) => eq(x, b[i]!));
}

export function fieldLess(f: FieldDiff | null, other: FieldDiff | null): boolean {
  // (Nomad first checks deep equality, which can only answer "not less" here too.)
  if (other === null) return false;
  if (f === null) return true;
  if (f.Name !== other.Name) return f.Name < other.Name;
  if (f.Old !== other.Old) return f.Old < other.Old;
  return f.New < other.New;
}

/**
 * ObjectDiff.Less, with its quirks kept: it sorts the fields and objects of
 * both diffs it compares (in place), and it answers "less" as soon as one
 * pair of fields is less, whatever the pairs before said.
 */
export function objectLess(o: ObjectDiff | null, other: ObjectDiff | null): boolean {
  if (sameObject(o, other) || other === null) return false;
  if (o === null) return true;
  if (o.Name !== other.Name) return o.Name < other.Name;
  if (o.Type !== other.Type) return typeLess(o.Type, other.Type);
  const oFields = o.Fields?.length ?? 0;
  const otherFields = other.Fields?.length ?? 0;
  if (oFields !== otherFields) return oFields < otherFields;
  const oObjects = o.Objects?.length ?? 0;
  const otherObjects = other.Objects?.length ?? 0;
  if (oObjects !== otherObjects) return oObjects < otherObjects;
  sortFields(o.Fields);
  sortFields(other.Fields);
  for (const [i, f] of (o.Fields ?? []).entries()) if (fieldLess(f, other.Fields![i]!)) return true;
  sortObjects(o.Objects);
  sortObjects(other.Objects);
  for (const [i, x] of (o.Objects ?? []).entries()) if (objectLess(x, other.Objects![i]!)) return true;
  return false;
}

/**
 * Go's sort.Sort. Up to 12 elements it is an insertion sort, reproduced
 * here step for step: with ObjectDiff's comparator, which is not a strict
 * order, the result depends on the algorithm. Longer lists are sorted by a
 * comparator built from `less`: Go's pdqsort then starts from an order that
 * map iteration randomised, so no port could give Go's exact result there.
 */
export function goSort<T>(list: T[] | null, less: (a: T, b: T) => boolean): void {
  if (!list || list.length < 2) return;
  if (list.length <= 12) {
    for (let i = 1; i < list.length; i++) {
      for (let j = i; j > 0 && less(list[j]!, list[j - 1]!); j--) {
        const t = list[j]!;
        list[j] = list[j - 1]!;
        list[j - 1] = t;
      }
    }
    return;
  }
  list.sort((a, b) => (less(a, b) ? -1 : less(b, a) ? 1 : 0));
}

export const sortFields = (list: FieldDiff[] | null) => goSort(list, fieldLess);
export const sortObjects = (list: ObjectDiff[] | null) => goSort(list, objectLess);

/** fieldDiff: null when equal (unless contextual, which keeps unchanged fields as None). */
export function fieldDiff(oldV: string, newV: string, name: string, contextual: boolean): FieldDiff | null {
  if (oldV === newV) {
    if (!contextual) return null;
    return { Type: "None", Name: name, Old: oldV, New: newV, Annotations: null };
  }
  if (oldV === "") return { Type: "Added", Name: name, Old: "", New: newV, Annotations: null };
  if (newV === "") return { Type: "Deleted", Name: name, Old: oldV, New: "", Annotations: null };
  return { Type: "Edited", Name: name, Old: oldV, New: newV, Annotations: null };
}

export type Flat = Readonly<Record<string, string>> | null;

/** fieldDiffs: the sorted diffs of two flat maps (a key missing on one side is ""). */
export function fieldDiffs(oldFlat: Flat, newFlat: Flat, contextual: boolean): FieldDiff[] | null {
  let diffs: FieldDiff[] | null = null;
  const o = oldFlat ?? {};
  const n = newFlat ?? {};
  for (const [k, oldV] of Object.entries(o)) {
    const d = fieldDiff(oldV, Object.hasOwn(n, k) ? n[k]! : "", k, contextual);
    if (d) diffs = append(diffs, d);
  }
  for (const [k, newV] of Object.entries(n)) {
    if (Object.hasOwn(o, k)) continue;
    const d = fieldDiff("", newV, k, contextual);
    if (d) diffs = append(diffs, d);
  }
  sortFields(diffs);
  return diffs;
}

/** stringSetDiff: a list of strings compared as a set, each member a field named after the set. */
export function stringSetDiff(
  oldList: readonly string[],
  newList: readonly string[],
  name: string,
  contextual: boolean,
): ObjectDiff | null {
  const oldSet = new Set(oldList);
  const newSet = new Set(newList);
  const equal = oldSet.size === newSet.size && [...oldSet].every((k) => newSet.has(k));
  if (equal && !contextual) return null;
  const diff: ObjectDiff = { Type: "None", Name: name, Fields: null, Objects: null };
  let added = false;
  let removed = false;
  // A member "" unchanged makes no field (Go would append a nil one).
  for (const k of oldSet) {
    if (!newSet.has(k)) {
      diff.Fields = append(diff.Fields, ...nonNull(fieldDiff(k, "", name, contextual)));
      removed = true;
    } else if (contextual) {
      diff.Fields = append(diff.Fields, ...nonNull(fieldDiff(k, k, name, contextual)));
    }
  }
  for (const k of newSet) {
    if (oldSet.has(k)) continue;
    diff.Fields = append(diff.Fields, ...nonNull(fieldDiff("", k, name, contextual)));
    added = true;
  }
  sortFields(diff.Fields);
  if (added && removed) diff.Type = "Edited";
  else if (added) diff.Type = "Added";
  else if (removed) diff.Type = "Deleted";
  else if (!diff.Fields) return null;
  return diff;
}

export const nonNull = <T>(x: T | null): T[] => (x === null ? [] : [x]);

/** The type of an object diff read off its fields (an edit, or additions and deletions, is Edited). */
export function typeFromFields(fields: readonly FieldDiff[] | null): DiffType | null {
  let added = false;
  let deleted = false;
  for (const f of fields ?? []) {
    if (f.Type === "Edited") return "Edited";
    if (f.Type === "Deleted") deleted = true;
    if (f.Type === "Added") added = true;
  }
  if (added && deleted) return "Edited";
  if (added) return "Added";
  if (deleted) return "Deleted";
  return null;
}

/**
 * primitiveObjectDiff: the diff of two objects' primitive fields, or null
 * when none changed (even in contextual mode). `undefined` is an absent
 * object (Go's untyped nil).
 */
export function primitiveObjectDiff(
  oldV: GoValue | undefined,
  newV: GoValue | undefined,
  type: GoType,
  filter: readonly string[] | null,
  name: string,
  contextual: boolean,
): ObjectDiff | null {
  const oldFlat = flatten(oldV, type, filter, true);
  const newFlat = flatten(newV, type, filter, true);
  // A nil pointer flattens to {"": "nil"}, which Nomad drops.
  if (oldFlat) delete oldFlat[""];
  if (newFlat) delete newFlat[""];
  const fields = fieldDiffs(oldFlat, newFlat, contextual);
  const t = typeFromFields(fields);
  return t ? { Type: t, Name: name, Fields: fields, Objects: null } : null;
}

/**
 * primitiveObjectSetDiff: two lists compared as sets of objects, matched by
 * `diffID` when it gives one (artifacts by RelativeDest) and otherwise by
 * their whole value (Nomad hashes it), so that an edited constraint is one
 * deleted and one added.
 */
export function primitiveObjectSetDiff(
  oldList: readonly GoValue[],
  newList: readonly GoValue[],
  type: GoType,
  filter: readonly string[] | null,
  name: string,
  contextual: boolean,
  diffID?: (v: GoValue) => string,
): ObjectDiff[] | null {
  const makeSet = (objects: readonly GoValue[]) => {
    const set = new Map<string, GoValue>();
    for (const obj of objects) {
      if (obj === null) continue;
      set.set(diffID?.(obj) || valueKey(obj), obj);
    }
    return set;
  };
  const oldSet = makeSet(oldList);
  const newSet = makeSet(newList);
  let diffs: ObjectDiff[] | null = null;
  for (const [k, o] of oldSet) {
    const d = primitiveObjectDiff(o, newSet.get(k), type, filter, name, contextual);
    if (d) diffs = append(diffs, d);
  }
  for (const [k, n] of newSet) {
    if (oldSet.has(k)) continue;
    // Go appends even a nil diff here (an all-empty object); it is left out.
    const d = primitiveObjectDiff(undefined, n, type, filter, name, contextual);
    if (d) diffs = append(diffs, d);
  }
  sortObjects(diffs);
  return diffs;
}

/** The three-way start every object diff shares: null when equal, else the type and the flat fields. */
interface Sides {
  readonly type: "Added" | "Deleted" | "Edited";
  /** The old value, or the zero value of `type` when there was none. */
  readonly old: GoValue;
  readonly new: GoValue;
  readonly oldFlat: Record<string, string> | null;
  readonly newFlat: Record<string, string> | null;
}

export function sides(
  oldV: GoValue,
  newV: GoValue,
  type: GoType,
  filter: readonly string[] | null = null,
  primitiveOnly = true,
): Sides | null {
  if (deepEqual(oldV, newV)) return null;
  if (oldV === null)
    return {
      type: "Added",
      old: zeroOf(type),
      new: newV,
      oldFlat: null,
      newFlat: flatten(newV, type, filter, primitiveOnly),
    };
  if (newV === null)
    return {
      type: "Deleted",
      old: oldV,
      new: zeroOf(type),
      oldFlat: flatten(oldV, type, filter, primitiveOnly),
      newFlat: null,
    };
  return {
    type: "Edited",
    old: oldV,
    new: newV,
    oldFlat: flatten(oldV, type, filter, primitiveOnly),
    newFlat: flatten(newV, type, filter, primitiveOnly),
  };
}

export function objectDiff(type: ObjectDiff["Type"], name: string, fields: FieldDiff[] | null): ObjectDiff {
  return { Type: type, Name: name, Fields: fields, Objects: null };
}

/** Adds a nested diff, if there is one. */
export function addObject(diff: ObjectDiff, nested: ObjectDiff | null): void {
  if (nested) diff.Objects = append(diff.Objects, nested);
}

/**
 * A list diffed as a map by `key` (a later element with the same key
 * replaces an earlier one, as in Go's map), each pair through `diff`.
 */
export function keyedDiffs(
  oldList: readonly GoValue[],
  newList: readonly GoValue[],
  key: (v: GoValue) => string,
  diff: (o: GoValue, n: GoValue) => ObjectDiff | null,
  missing: GoValue = null,
): ObjectDiff[] | null {
  const byKey = (l: readonly GoValue[]) => {
    const m = new Map<string, GoValue>();
    for (const v of l) if (v !== null) m.set(key(v), v);
    return m;
  };
  const oldMap = byKey(oldList);
  const newMap = byKey(newList);
  let diffs: ObjectDiff[] | null = null;
  for (const [k, o] of oldMap) {
    const d = diff(o, newMap.has(k) ? newMap.get(k)! : missing);
    if (d) diffs = append(diffs, d);
  }
  for (const [k, n] of newMap) {
    if (oldMap.has(k)) continue;
    const d = diff(missing, n);
    if (d) diffs = append(diffs, d);
  }
  sortObjects(diffs);
  return diffs;
}

/** A map diff: Added when the old map is empty, Deleted when the new one is, both flattened whole. */
export function mapDiff(
  oldM: GoValue,
  newM: GoValue,
  type: GoType,
  name: string,
  contextual: boolean,
): ObjectDiff | null {
  if (deepEqual(oldM, newM)) return null;
  const size = (m: GoValue) => (m && typeof m === "object" ? Object.keys(m).length : 0);
  const type_ = size(oldM) === 0 ? "Added" : size(newM) === 0 ? "Deleted" : "Edited";
  return objectDiff(
    type_,
    name,
    fieldDiffs(flatten(oldM, type, null, false), flatten(newM, type, null, false), contextual),
  );
}

/** configDiff: an opaque map[string]interface{} (a task's or a proxy's config), flattened whole. */
export function configDiff(oldC: GoValue, newC: GoValue, contextual: boolean): ObjectDiff | null {
  return mapDiff(oldC, newC, map(ANY), "Config", contextual);
}

/** Two jobs, groups or tasks that are not the same thing (Nomad's diff error). */
export class JobDiffError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JobDiffError";
  }
}

/** Go's %q of a plain string. */
export const goQuote = (s: string) => JSON.stringify(s);

/** Not JSON's null nor absent: Go's non-nil. */
export const present = (v: unknown) => v !== null && v !== undefined;

/**
 * Diffs of two lists of named objects (groups, tasks) matched by Name, as
 * Go's map keyed by name (the last of a name wins): removed, edited and
 * added ones, sorted by name; null when there are none.
 */
export function diffsByName<D extends { readonly Name: string }>(
  oldList: readonly GoValue[],
  newList: readonly GoValue[],
  diff: (a: GoValue, b: GoValue) => D,
): D[] | null {
  const byName = (l: readonly GoValue[]) =>
    new Map(l.filter(present).map((v) => [str(v, "Name"), v] as const));
  const oldMap = byName(oldList);
  const newMap = byName(newList);
  const diffs: D[] = [];
  for (const [name, v] of oldMap) diffs.push(diff(v, newMap.get(name) ?? null));
  for (const [name, v] of newMap) if (!oldMap.has(name)) diffs.push(diff(null, v));
  diffs.sort((a, b) => (a.Name < b.Name ? -1 : a.Name > b.Name ? 1 : 0));
  return diffs.length > 0 ? diffs : null;
}

/** Constraints (of a job, group or task): a set of whole values. */
export function constraintDiffs(a: GoValue, b: GoValue, contextual: boolean): ObjectDiff[] | null {
  return primitiveObjectSetDiff(
    list(a, "Constraints"),
    list(b, "Constraints"),
    CONSTRAINT,
    ["str"],
    "Constraint",
    contextual,
  );
}

/** Affinities: a set of whole values, as constraints. */
export function affinityDiffs(a: GoValue, b: GoValue, contextual: boolean): ObjectDiff[] | null {
  return primitiveObjectSetDiff(
    list(a, "Affinities"),
    list(b, "Affinities"),
    AFFINITY,
    ["str"],
    "Affinity",
    contextual,
  );
}
