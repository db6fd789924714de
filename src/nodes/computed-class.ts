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
  const input = {
    Datacenter: node.Datacenter,
    NodeClass: node.NodeClass,
    Attributes: withoutUnique(node.Attributes),
    Meta: withoutUnique(node.Meta ?? {}),
    Devices: node.NodeResources?.Devices ?? null,
    // Nomad hashes the pool too. Left out for `default`, so the classes of
    // nodes registered before node pools existed stay what they were.
    ...(node.NodePool && node.NodePool !== "default" ? { NodePool: node.NodePool } : {}),
  };
  const digest = createHash("sha256").update(canonicalJson(input)).digest();
  return `v1:${digest.readBigUInt64BE(0).toString()}`;
}

function withoutUnique(map: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(map).sort()) if (!k.startsWith("unique.")) out[k] = map[k]!;
  return out;
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
