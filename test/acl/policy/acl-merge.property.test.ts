import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Acl, compileAcl } from "../../../src/acl/policy/compile-acl.ts";
import { parsePolicyJson } from "../../../src/acl/policy/parse-policy.ts";
import type { Policy } from "../../../src/acl/policy/policy-types.ts";

/**
 * Merge laws of Nomad's ACL, over random policies (Nomad's JSON form, parsed
 * for real): deny wins per name whatever the order, the order of policies
 * never matters, an exact block decides alone for its name.
 */

const NAMES = ["a", "b", "ab", "a-b", "ba"];
const GLOBS = ["*", "a*", "*b", "a*b", "*-*"];
const NS_CAPS = ["list-jobs", "read-job", "submit-job", "alloc-exec", "read-logs", "deny"];
const NP_CAPS = ["read", "write", "delete", "deny"];
const HV_CAPS = ["mount-readonly", "mount-readwrite", "deny"];
const VAR_CAPS = ["read", "list", "write", "destroy", "deny"];
const LEVELS = ["deny", "read", "write", "scale"];

const block = (caps: readonly string[], policies: readonly string[]) =>
  fc.record({
    name: fc.constantFrom(...NAMES, ...GLOBS),
    policy: fc.constantFrom("", ...policies),
    caps: fc.array(fc.constantFrom(...caps), { maxLength: 3 }),
  });

const rulesArb = fc.record({
  namespaces: fc.array(
    fc.record({
      block: block(NS_CAPS, ["deny", "read", "write", "scale"]),
      paths: fc.array(
        fc.record({
          path: fc.constantFrom("x", "x/*", "*", "y"),
          caps: fc.array(fc.constantFrom(...VAR_CAPS), { maxLength: 3 }),
        }),
        { maxLength: 2 },
      ),
    }),
    { maxLength: 4 },
  ),
  nodePools: fc.array(block(NP_CAPS, ["deny", "read", "write"]), { maxLength: 3 }),
  hostVolumes: fc.array(block(HV_CAPS, ["deny", "read", "write"]), { maxLength: 3 }),
  agent: fc.option(fc.constantFrom(...LEVELS), { nil: undefined }),
  node: fc.option(fc.constantFrom(...LEVELS), { nil: undefined }),
  plugin: fc.option(fc.constantFrom("deny", "read", "list"), { nil: undefined }),
});

type Rules = typeof rulesArb extends fc.Arbitrary<infer R> ? R : never;

const body = (policy: string, caps: readonly string[]) => ({
  ...(policy ? { policy } : {}),
  ...(caps.length > 0 ? { capabilities: caps } : {}),
});

/** Nomad's JSON form, blocks as a list so names may repeat (an empty list is left out: Nomad panics on it). */
function toJson(r: Rules): string {
  const out: Record<string, unknown> = {};
  if (r.namespaces.length > 0) {
    out.namespace = r.namespaces.map(({ block: b, paths }) => ({
      [b.name]: {
        ...body(b.policy, b.caps),
        ...(paths.length > 0
          ? { variables: [{ path: paths.map((p) => ({ [p.path]: { capabilities: p.caps } })) }] }
          : {}),
      },
    }));
  }
  if (r.nodePools.length > 0) out.node_pool = r.nodePools.map((b) => ({ [b.name]: body(b.policy, b.caps) }));
  if (r.hostVolumes.length > 0)
    out.host_volume = r.hostVolumes.map((b) => ({ [b.name]: body(b.policy, b.caps) }));
  if (r.agent) out.agent = { policy: r.agent };
  if (r.node) out.node = { policy: r.node };
  if (r.plugin) out.plugin = { policy: r.plugin };
  // A policy needs one block.
  if (Object.keys(out).length === 0) out.operator = { policy: "read" };
  return JSON.stringify(out);
}

const policiesArb = fc.array(
  rulesArb.map((r) => parsePolicyJson(toJson(r))),
  { minLength: 1, maxLength: 4 },
);
const QUERY_NAMES = [...NAMES, "*", "abab", "zz"];

/** Every answer an ACL gives over the names the policies can mention. */
function answers(acl: Acl): boolean[] {
  const out: boolean[] = [];
  for (const n of QUERY_NAMES) {
    out.push(acl.allowNamespace(n), acl.allowNodePool(n), acl.allowHostVolume(n), acl.allowVariableSearch(n));
    for (const op of NS_CAPS) out.push(acl.allowNamespaceOperation(n, op));
    for (const op of NP_CAPS) out.push(acl.allowNodePoolOperation(n, op));
    for (const op of HV_CAPS) out.push(acl.allowHostVolumeOperation(n, op));
    for (const path of ["x", "x/y", "y", "z"])
      for (const op of VAR_CAPS) out.push(acl.allowVariableOperation(n, path, op));
  }
  out.push(
    acl.allowNodePoolSearch(),
    acl.allowAgentRead(),
    acl.allowAgentWrite(),
    acl.allowNodeRead(),
    acl.allowNodeWrite(),
  );
  out.push(acl.allowPluginRead(), acl.allowPluginList());
  return out;
}

describe("ACL merge laws", () => {
  it("the order of policies never matters", () => {
    fc.assert(
      fc.property(policiesArb, fc.infiniteStream(fc.nat()), (policies, draws) => {
        const shuffled = [...policies];
        for (let i = shuffled.length - 1; i > 0; i--) {
          const j = draws.next().value % (i + 1);
          [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
        }
        expect(answers(compileAcl(shuffled))).toEqual(answers(compileAcl(policies)));
      }),
      { numRuns: 150 },
    );
  });

  it("a deny for a name, in any policy at any place, wins for that name", () => {
    const denyArb = fc.record({
      kind: fc.constantFrom("namespace", "node_pool", "host_volume"),
      name: fc.constantFrom(...NAMES, ...GLOBS),
      how: fc.constantFrom("policy", "capability"),
    });
    fc.assert(
      fc.property(policiesArb, denyArb, fc.nat(), (policies, deny, at) => {
        const denyBody =
          deny.how === "policy"
            ? { policy: "deny" }
            : { capabilities: deny.kind === "namespace" ? ["read-logs", "deny"] : ["deny"] };
        const denial = parsePolicyJson(JSON.stringify({ [deny.kind]: [{ [deny.name]: denyBody }] }));
        const all: Policy[] = [...policies];
        all.splice(at % (all.length + 1), 0, denial);
        const acl = compileAcl(all);
        // Asked by its own name (a glob asked literally matches itself), the denied name grants nothing.
        const ops = deny.kind === "namespace" ? NS_CAPS : deny.kind === "node_pool" ? NP_CAPS : HV_CAPS;
        for (const op of ops.filter((o) => o !== "deny")) {
          if (deny.kind === "namespace") {
            if (deny.name !== "*") expect(acl.allowNamespaceOperation(deny.name, op)).toBe(false);
          } else if (deny.kind === "node_pool") expect(acl.allowNodePoolOperation(deny.name, op)).toBe(false);
          else expect(acl.allowHostVolumeOperation(deny.name, op)).toBe(false);
        }
        if (deny.kind === "namespace" && deny.name !== "*") expect(acl.allowNamespace(deny.name)).toBe(false);
        if (deny.kind === "node_pool") expect(acl.allowNodePool(deny.name)).toBe(false);
        if (deny.kind === "host_volume") expect(acl.allowHostVolume(deny.name)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it("a deny level for agent, node or plugin, anywhere, wins", () => {
    fc.assert(
      fc.property(
        policiesArb,
        fc.constantFrom("agent", "node", "plugin"),
        fc.nat(),
        (policies, blockName, at) => {
          const all: Policy[] = [...policies];
          all.splice(
            at % (all.length + 1),
            0,
            parsePolicyJson(JSON.stringify({ [blockName]: { policy: "deny" } })),
          );
          const acl = compileAcl(all);
          if (blockName === "agent")
            expect([acl.allowAgentRead(), acl.allowAgentWrite()]).toEqual([false, false]);
          if (blockName === "node")
            expect([acl.allowNodeRead(), acl.allowNodeWrite()]).toEqual([false, false]);
          if (blockName === "plugin")
            expect([acl.allowPluginRead(), acl.allowPluginList()]).toEqual([false, false]);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("an exact namespace block decides alone for its name, whatever the globs say", () => {
    fc.assert(
      fc.property(policiesArb, fc.constantFrom(...NAMES), (policies, name) => {
        const exact = policies.flatMap((p) => (p.Namespaces ?? []).filter((n) => n.Name === name));
        fc.pre(exact.length > 0);
        const caps = new Set<string>();
        for (const n of exact) {
          if (caps.has("deny")) continue;
          for (const c of n.Capabilities ?? []) {
            if (c === "deny") {
              caps.clear();
              caps.add("deny");
              break;
            }
            caps.add(c);
          }
        }
        const acl = compileAcl(policies);
        for (const op of NS_CAPS) expect(acl.allowNamespaceOperation(name, op), op).toBe(caps.has(op));
      }),
      { numRuns: 200 },
    );
  });
});
