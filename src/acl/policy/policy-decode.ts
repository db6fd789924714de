import {
  filterItems,
  GoPanic,
  goTypeName,
  type Hcl1Node,
  Hcl1PosError,
  indexPanic,
  item,
  keyValue,
  NO_POS,
  nilPanic,
  nodePos,
  type ObjectItem,
  type ObjectList,
  objectList,
} from "./hcl1-ast.ts";

/**
 * `hcl.Decode(&acl.Policy{}, rules)` as HCL v1 does it by reflection over
 * Nomad's structs, then Nomad's own fix for blocks without a label
 * (acl/policy.go hclDecode), for the one schema a policy has. Nomad's
 * results follow from these rules, quirks included:
 * - a field takes the items whose first key equals its name ignoring case;
 *   items with more keys are decoded as a list first, then items with none,
 *   each value in turn (a second `agent` block overwrites the first's
 *   policy; a second `capabilities` list is appended to the first);
 * - a label is a key, so a struct's `key` field takes the first remaining
 *   key; extra labels nest the body one level deeper, out of reach;
 * - a number or a bool decodes as a string by its text.
 * The decoded policy is not validated yet (parse-policy.ts does that).
 */

export interface RawPath {
  PathSpec: string;
  Capabilities: string[] | null;
}

export interface RawVariables {
  Paths: RawPath[] | null;
}

export interface RawNamespace {
  Name: string;
  Policy: string;
  Capabilities: string[] | null;
  Variables: RawVariables | null;
}

/** NodePoolPolicy and HostVolumePolicy share this shape. */
export interface RawNamed {
  Name: string;
  Policy: string;
  Capabilities: string[] | null;
}

export interface RawLevel {
  Policy: string;
}

export interface RawPolicy {
  Namespaces: RawNamespace[] | null;
  NodePools: RawNamed[] | null;
  HostVolumes: RawNamed[] | null;
  Agent: RawLevel | null;
  Node: RawLevel | null;
  Operator: RawLevel | null;
  Quota: RawLevel | null;
  Plugin: RawLevel | null;
}

type Desc =
  | { readonly kind: "string" }
  | { readonly kind: "slice"; readonly elem: Desc }
  | { readonly kind: "ptr"; readonly elem: StructDesc };

interface FieldDesc {
  readonly name: string;
  /** The hcl tag's name; "" means the Go field name; "key" marks the `hcl:",key"` field. */
  readonly tag: string;
  readonly desc?: Desc;
}

interface StructDesc {
  readonly fields: readonly FieldDesc[];
  readonly make: () => Record<string, unknown>;
}

const STRING: Desc = { kind: "string" };
const STRINGS: Desc = { kind: "slice", elem: STRING };
const ptrs = (elem: StructDesc): Desc => ({ kind: "slice", elem: { kind: "ptr", elem } });
const KEY: FieldDesc = { name: "Name", tag: "key" };

const PATH: StructDesc = {
  fields: [
    { name: "PathSpec", tag: "key" },
    { name: "Capabilities", tag: "", desc: STRINGS },
  ],
  make: () => ({ PathSpec: "", Capabilities: null }),
};

const VARIABLES: StructDesc = {
  fields: [{ name: "Paths", tag: "path", desc: ptrs(PATH) }],
  make: () => ({ Paths: null }),
};

const NAMESPACE: StructDesc = {
  fields: [
    KEY,
    { name: "Policy", tag: "", desc: STRING },
    { name: "Capabilities", tag: "", desc: STRINGS },
    { name: "Variables", tag: "variables", desc: { kind: "ptr", elem: VARIABLES } },
  ],
  make: () => ({ Name: "", Policy: "", Capabilities: null, Variables: null }),
};

const NAMED: StructDesc = {
  fields: [KEY, { name: "Policy", tag: "", desc: STRING }, { name: "Capabilities", tag: "", desc: STRINGS }],
  make: () => ({ Name: "", Policy: "", Capabilities: null }),
};

const LEVEL: StructDesc = {
  fields: [{ name: "Policy", tag: "", desc: STRING }],
  make: () => ({ Policy: "" }),
};

const level = (name: string, tag: string): FieldDesc => ({ name, tag, desc: { kind: "ptr", elem: LEVEL } });

const POLICY: StructDesc = {
  fields: [
    { name: "Namespaces", tag: "namespace", desc: ptrs(NAMESPACE) },
    { name: "NodePools", tag: "node_pool", desc: ptrs(NAMED) },
    { name: "HostVolumes", tag: "host_volume", desc: ptrs(NAMED) },
    level("Agent", "agent"),
    level("Node", "node"),
    level("Operator", "operator"),
    level("Quota", "quota"),
    level("Plugin", "plugin"),
  ],
  make: () => ({
    Namespaces: null,
    NodePools: null,
    HostVolumes: null,
    Agent: null,
    Node: null,
    Operator: null,
    Quota: null,
    Plugin: null,
  }),
};

function decode(name: string, node: Hcl1Node | null, desc: Desc, current: unknown): unknown {
  switch (desc.kind) {
    case "string":
      return decodeString(name, node);
    case "slice":
      return decodeSlice(name, node, desc.elem, current as unknown[] | null);
    case "ptr": {
      // A pointer already set is decoded into, not replaced: blocks of one kind merge.
      const target = (current as Record<string, unknown> | null) ?? desc.elem.make();
      decodeStruct(name, node, desc.elem, target);
      return target;
    }
  }
}

function decodeString(name: string, node: Hcl1Node | null): string {
  if (node === null) throw nilPanic();
  if (node.type === "literal") {
    if (node.kind !== "STRING" && node.kind !== "HEREDOC") return node.text;
    if (node.unquoteError !== undefined) throw new GoPanic(node.unquoteError);
    return node.value;
  }
  throw new Hcl1PosError(nodePos(node), `${name}: unknown type for string ${goTypeName(node)}`);
}

function decodeSlice(name: string, node: Hcl1Node | null, elem: Desc, current: unknown[] | null): unknown[] {
  if (node === null) throw nilPanic();
  let items: readonly Hcl1Node[];
  if (node.type === "items") items = node.items;
  else if (node.type === "object") items = [node];
  else if (node.type === "list") items = node.elems;
  else throw new Hcl1PosError(nodePos(node), `unknown slice type: ${goTypeName(node)}`);
  // A nil slice becomes an empty one even when nothing is added: `capabilities = []` is not nil.
  const result = current ? [...current] : [];
  items.forEach((it, i) => {
    const zero = elem.kind === "string" ? "" : null;
    result.push(decode(`${name}[${i}]`, expandObject(it, elem), elem, zero));
  });
  return result;
}

/**
 * HCL's expandObject: an item with exactly two keys bound for a struct is
 * split, the first key kept and the rest nested one level down, so that
 * `namespace "a" "b" {...}` names the namespace "a" and hides the body
 * under "b". (HCL also shortens the original item's keys; nothing reads that
 * item again while decoding, and the label fix reads a fresh parse, so a new
 * item gives the same results and leaves the tree as it was.)
 */
function expandObject(node: Hcl1Node, elem: Desc): Hcl1Node {
  if (node.type !== "item" || elem.kind !== "ptr" || node.keys.length !== 2) return node;
  const inner = item(node.keys.slice(1), node.val);
  return item([node.keys[0]!], { type: "object", list: objectList([inner]), pos: NO_POS });
}

function decodeStruct(
  name: string,
  node: Hcl1Node | null,
  desc: StructDesc,
  target: Record<string, unknown>,
): void {
  let it: ObjectItem | undefined;
  let n = node;
  if (n?.type === "item") {
    it = n;
    n = n.val;
  }
  if (n?.type === "object") n = n.list;
  // A literal with its item reads as a one-item object (HCL's "object itself is a literal" case).
  if (n?.type === "literal" && it) n = objectList([it]);
  if (n === null || n === undefined) throw nilPanic();
  if (n.type !== "items") {
    throw new Hcl1PosError(nodePos(n), `${name}: not an object type for struct (${goTypeName(n)})`);
  }
  const list: ObjectList = n;
  // HCL reads every key up front (for its unused-keys bookkeeping): a key Go cannot unquote panics here.
  for (const i of list.items) for (const k of i.keys) keyValue(k);

  for (const field of desc.fields) {
    if (field.tag === "key") {
      if (!it) throw new Hcl1PosError(nodePos(list), `${name}: ${field.name} asked for 'key', impossible`);
      const k = it.keys[0];
      if (k === undefined) throw indexPanic(0, 0);
      target[field.name] = keyValue(k);
      continue;
    }
    const fieldName = field.tag || field.name;
    const filtered = filterItems(list, fieldName);
    const nested = filtered.filter((i) => i.keys.length > 0);
    const direct = filtered.filter((i) => i.keys.length === 0);
    if (nested.length === 0 && direct.length === 0) continue;
    const path = `${name}.${fieldName}`;
    const fieldDesc = field.desc!;
    if (nested.length > 0)
      target[field.name] = decode(path, objectList(nested), fieldDesc, target[field.name]);
    for (const m of direct) {
      const v = m.val?.type === "object" ? objectList(m.val.list.items) : m.val;
      target[field.name] = decode(path, v, fieldDesc, target[field.name]);
    }
  }
}

/**
 * The policy decoded from a tree, then Nomad's label fix: a `namespace`,
 * `node_pool`, `host_volume` or `path` block written without a label gets
 * the empty name (HCL v1 would have named it after its first attribute). The
 * fix counts blocks in the text and indexes the decoded lists with that
 * count, which need not line up; Go then panics on a bad index, and so does
 * this (GoPanic).
 */
export function decodePolicy(root: ObjectList): RawPolicy {
  const policy = POLICY.make();
  decodeStruct("root", root, POLICY, policy);
  const p = policy as unknown as RawPolicy;

  const at = <T>(list: T[] | null, i: number): T => {
    const v = list?.[i];
    if (v === undefined) throw indexPanic(i, list?.length ?? 0);
    return v;
  };
  filterItems(root, "namespace").forEach((ns, i) => {
    if (ns.keys.length === 0) at(p.Namespaces, i).Name = "";
    if (ns.val?.type !== "object") return;
    const vars = filterItems(ns.val.list, "variables");
    const first = vars[0];
    if (first === undefined || first.val?.type !== "object") return;
    filterItems(first.val.list, "path").forEach((path, j) => {
      if (path.keys.length > 0) return;
      const variables = at(p.Namespaces, i).Variables;
      if (variables === null) throw nilPanic();
      at(variables.Paths, j).PathSpec = "";
    });
  });
  filterItems(root, "node_pool").forEach((np, i) => {
    if (np.keys.length === 0) at(p.NodePools, i).Name = "";
  });
  filterItems(root, "host_volume").forEach((hv, i) => {
    if (hv.keys.length === 0) at(p.HostVolumes, i).Name = "";
  });
  return p;
}
