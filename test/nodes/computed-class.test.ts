import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { computeNodeClass } from "../../src/nodes/computed-class.ts";
import { DEFAULT_SHAPE, nodeBody } from "../../src/nodesim/node-body.ts";

type ClassInput = Parameters<typeof computeNodeClass>[0];

/**
 * The class as it was computed before the one-pass rewrite (an object of
 * the hashed fields, then its canonical JSON): the classes in existing logs
 * are these, so the rewrite must give the same values.
 */
function referenceClass(node: ClassInput): string {
  const input = {
    Datacenter: node.Datacenter,
    NodeClass: node.NodeClass,
    Attributes: withoutUnique(node.Attributes),
    Meta: withoutUnique(node.Meta ?? {}),
    Devices: node.NodeResources?.Devices ?? null,
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

/** A small deterministic PRNG, so a failure names a reproducible case. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const KEYS = [
  "a",
  "b",
  "10",
  "2",
  "unique.x",
  "unique.",
  "uniq",
  "__proto__",
  "é",
  'k"q',
  "Z",
  "driver.docker",
];

function randomMap(r: () => number): Record<string, string> {
  const m: Record<string, string> = {};
  const n = Math.floor(r() * 6);
  for (let i = 0; i < n; i++) {
    const k = KEYS[Math.floor(r() * KEYS.length)]!;
    // JSON.parse makes `__proto__` an own key, as a request body's would be.
    Object.defineProperty(m, k, {
      value: `v${Math.floor(r() * 3)}`,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return m;
}

describe("computeNodeClass", () => {
  it("gives the simulated nodes' classes as the object-then-JSON form did", () => {
    for (let i = 0; i < 50; i++) {
      const body = nodeBody({ id: `id-${i}`, secret: "s", name: `sim-${i}`, index: i }, DEFAULT_SHAPE);
      const node = { ...body, NodePool: i % 2 === 0 ? "default" : "gpu" } as unknown as ClassInput;
      expect(computeNodeClass(node)).toBe(referenceClass(node));
    }
  });

  it("gives the same class as the object-then-JSON form for odd maps, pools and devices", () => {
    const r = prng(24);
    for (let i = 0; i < 2_000; i++) {
      const node = {
        Datacenter: r() < 0.1 ? "" : `dc${Math.floor(r() * 2)}`,
        NodeClass: r() < 0.1 ? (undefined as unknown as string) : `c${Math.floor(r() * 2)}`,
        Attributes: randomMap(r),
        Meta: r() < 0.3 ? null : randomMap(r),
        NodeResources:
          r() < 0.3
            ? null
            : { Devices: r() < 0.5 ? [{ Name: "gpu", Attributes: randomMap(r), Count: 2 }] : undefined },
        NodePool: r() < 0.3 ? undefined : r() < 0.5 ? "default" : "p",
      } as ClassInput;
      expect(computeNodeClass(node), JSON.stringify(node)).toBe(referenceClass(node));
    }
  });

  it("does not hash unique. attributes, and does hash the others", () => {
    const base = {
      Datacenter: "dc1",
      NodeClass: "",
      Attributes: { a: "1" },
      Meta: null,
      NodeResources: null,
    };
    expect(computeNodeClass({ ...base, Attributes: { a: "1", "unique.hostname": "x" } })).toBe(
      computeNodeClass(base),
    );
    expect(computeNodeClass({ ...base, Attributes: { a: "2" } })).not.toBe(computeNodeClass(base));
  });
});
