import { deepEqual, field, type GoValue, list, str, strings, valueKey } from "./go-values.ts";
import {
  addObject,
  append,
  type Flat,
  fieldDiffs,
  keyedDiffs,
  type ObjectDiff,
  objectDiff,
  primitiveObjectDiff,
  sides,
  sortObjects,
} from "./job-diff-model.ts";
import { NETWORK_RESOURCE, PORT, REQUESTED_DEVICE, RESOURCES } from "./job-diff-types.ts";

/**
 * Nomad's diff of resources: the task's (or a sidecar's) asks, its
 * networks with their ports and DNS, and its devices (diff.go v1.6.1).
 */

export function resourcesDiff(r: GoValue, other: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(r, other, RESOURCES);
  if (!s) return null;
  const diff = objectDiff(s.type, "Resources", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  diff.Objects = append(
    diff.Objects,
    ...(networkResourceDiffs(list(s.old, "Networks"), list(s.new, "Networks"), contextual) ?? []),
  );
  diff.Objects = append(
    diff.Objects,
    ...(keyedDiffs(
      list(s.old, "Devices"),
      list(s.new, "Devices"),
      (d) => str(d, "Name"),
      (o, n) => {
        const ds = sides(o, n, REQUESTED_DEVICE);
        return ds ? objectDiff(ds.type, "Device", fieldDiffs(ds.oldFlat, ds.newFlat, contextual)) : null;
      },
    ) ?? []),
  );
  return diff;
}

/**
 * networkResourceDiffs: networks have no identity, so they are a set by
 * whole value: an edited network is one deleted and one added, and
 * networks in both lists make no diff at all.
 */
export function networkResourceDiffs(
  oldList: readonly GoValue[],
  newList: readonly GoValue[],
  contextual: boolean,
): ObjectDiff[] | null {
  const makeSet = (l: readonly GoValue[]) => {
    const m = new Map<string, GoValue>();
    for (const n of l) if (n !== null) m.set(valueKey(n), n);
    return m;
  };
  const oldSet = makeSet(oldList);
  const newSet = makeSet(newList);
  let diffs: ObjectDiff[] | null = null;
  for (const [k, o] of oldSet) {
    if (newSet.has(k)) continue;
    const d = networkDiff(o, null, contextual);
    if (d) diffs = append(diffs, d);
  }
  for (const [k, n] of newSet) {
    if (oldSet.has(k)) continue;
    const d = networkDiff(null, n, contextual);
    if (d) diffs = append(diffs, d);
  }
  sortObjects(diffs);
  return diffs;
}

function networkDiff(n: GoValue, other: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(n, other, NETWORK_RESOURCE, ["Device", "CIDR", "IP"]);
  if (!s) return null;
  const diff = objectDiff(s.type, "Network", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  diff.Objects = append(
    diff.Objects,
    ...(portDiffs(list(s.old, "ReservedPorts"), list(s.new, "ReservedPorts"), false, contextual) ?? []),
  );
  diff.Objects = append(
    diff.Objects,
    ...(portDiffs(list(s.old, "DynamicPorts"), list(s.new, "DynamicPorts"), true, contextual) ?? []),
  );
  addObject(diff, dnsDiff(field(s.old, "DNS"), field(s.new, "DNS"), contextual));
  return diff;
}

/** Ports by label; a dynamic port's Value is the scheduler's choice, so it is not diffed. */
function portDiffs(
  oldList: readonly GoValue[],
  newList: readonly GoValue[],
  dynamic: boolean,
  contextual: boolean,
): ObjectDiff[] | null {
  const filter = dynamic ? ["Value"] : null;
  const name = dynamic ? "Dynamic Port" : "Static Port";
  const byLabel = (l: readonly GoValue[]) => new Map(l.map((p) => [str(p, "Label"), p] as const));
  const oldPorts = byLabel(oldList);
  const newPorts = byLabel(newList);
  let diffs: ObjectDiff[] | null = null;
  for (const [label, o] of oldPorts) {
    const d = primitiveObjectDiff(o, newPorts.get(label), PORT, filter, name, contextual);
    if (d) diffs = append(diffs, d);
  }
  for (const [label, n] of newPorts) {
    if (oldPorts.has(label)) continue;
    const d = primitiveObjectDiff(undefined, n, PORT, filter, name, contextual);
    if (d) diffs = append(diffs, d);
  }
  sortObjects(diffs);
  return diffs;
}

/** DNSConfig.Diff: each list joined with commas, and only when not empty. */
function dnsDiff(d: GoValue, other: GoValue, contextual: boolean): ObjectDiff | null {
  if (deepEqual(d, other)) return null;
  const flat = (conf: GoValue): Flat => {
    const m: Record<string, string> = {};
    for (const key of ["Servers", "Searches", "Options"]) {
      const values = strings(conf, key);
      if (values.length > 0) m[key] = values.join(",");
    }
    return m;
  };
  const type = d === null ? "Added" : other === null ? "Deleted" : "Edited";
  return objectDiff(
    type,
    "DNS",
    fieldDiffs(d === null ? null : flat(d), other === null ? null : flat(other), contextual),
  );
}
