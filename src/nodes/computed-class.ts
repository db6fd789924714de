import { createHash } from "node:crypto";
import type { NodeSpec } from "../../streams/nodes.ts";

/**
 * Nomad's Node.ComputeClass: nodes that the scheduler cannot tell apart share
 * a class, so an evaluation blocked on one class is retried when any node of
 * that class changes. Nomad hashes the struct with hashstructure; this hashes
 * the same inputs (datacenter, class, node pool, attributes and meta without
 * their `unique.` keys, devices) in a canonical JSON form. The values differ from
 * Nomad's; equality between nodes is what matters.
 */
export function computeNodeClass(
  node: Pick<NodeSpec, "Datacenter" | "NodeClass" | "Attributes" | "Meta" | "NodeResources"> & {
    readonly NodePool?: string;
  },
): string {
  // The canonical JSON of { Datacenter, NodeClass, Attributes and Meta
  // without their `unique.` keys, Devices, NodePool unless default },
  // written in one pass in its sorted key order (Attributes, Datacenter,
  // Devices, Meta, NodeClass, NodePool): the same text as building that
  // object and serializing it, without the copies and the second sorts.
  let json = `{"Attributes":${withoutUniqueJson(node.Attributes)},"Datacenter":${canonicalJson(node.Datacenter)}`;
  json += `,"Devices":${canonicalJson(node.NodeResources?.Devices ?? null)}`;
  json += `,"Meta":${withoutUniqueJson(node.Meta ?? {})},"NodeClass":${canonicalJson(node.NodeClass)}`;
  // Nomad hashes the pool too. Left out for `default`, so the classes of
  // nodes registered before node pools existed stay what they were.
  if (node.NodePool && node.NodePool !== "default") json += `,"NodePool":${canonicalJson(node.NodePool)}`;
  const digest = createHash("sha256").update(`${json}}`).digest();
  return `v1:${digest.readBigUInt64BE(0).toString()}`;
}

/**
 * canonicalJson of the map without its `unique.` keys. `__proto__` is left
 * out too, as copying the map into a fresh object did (that assignment sets
 * no own key).
 */
function withoutUniqueJson(map: Readonly<Record<string, string>>): string {
  let out = "{";
  let first = true;
  for (const k of Object.keys(map).sort()) {
    if (k.startsWith("unique.") || k === "__proto__") continue;
    out += `${first ? "" : ","}${JSON.stringify(k)}:${canonicalJson(map[k])}`;
    first = false;
  }
  return `${out}}`;
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
