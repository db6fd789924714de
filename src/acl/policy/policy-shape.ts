import type { Policy } from "./policy-types.ts";

/**
 * A stored policy's `Parsed` field read back as a Policy. It comes from the
 * log (written by parsePolicy), so a wrong shape means a bad log or an old
 * schema: it is refused with the path of what is wrong, never half-used.
 */
export function asPolicy(value: unknown, what = "policy"): Policy {
  const p = object(value, what);
  list(p.Namespaces, `${what}.Namespaces`, (ns, at) => {
    named(ns, at);
    if (ns.Variables !== null) {
      const vars = object(ns.Variables, `${at}.Variables`);
      list(vars.Paths, `${at}.Variables.Paths`, (path, pat) => {
        str(path.PathSpec, `${pat}.PathSpec`);
        strings(path.Capabilities, `${pat}.Capabilities`);
      });
    }
  });
  list(p.NodePools, `${what}.NodePools`, named);
  list(p.HostVolumes, `${what}.HostVolumes`, named);
  for (const block of ["Agent", "Node", "Operator", "Quota", "Plugin"]) {
    if (p[block] !== null) str(object(p[block], `${what}.${block}`).Policy, `${what}.${block}.Policy`);
  }
  str(p.Raw, `${what}.Raw`);
  return value as Policy;
}

type Obj = Record<string, unknown>;

function object(v: unknown, at: string): Obj {
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw new TypeError(`${at}: expected an object`);
  return v as Obj;
}

function str(v: unknown, at: string): void {
  if (typeof v !== "string") throw new TypeError(`${at}: expected a string`);
}

function strings(v: unknown, at: string): void {
  if (v === null) return;
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string"))
    throw new TypeError(`${at}: expected strings or null`);
}

function list(v: unknown, at: string, each: (item: Obj, at: string) => void): void {
  if (v === null) return;
  if (!Array.isArray(v)) throw new TypeError(`${at}: expected a list or null`);
  v.forEach((x, i) => {
    each(object(x, `${at}[${i}]`), `${at}[${i}]`);
  });
}

function named(x: Obj, at: string): void {
  str(x.Name, `${at}.Name`);
  str(x.Policy, `${at}.Policy`);
  strings(x.Capabilities, `${at}.Capabilities`);
}
