import { type CompiledGlob, closestMatch, compareBytes, compileGlob, matchingGlobs } from "./glob.ts";
import {
  HostVolumeCapability,
  NamespaceCapability,
  NodePoolCapability,
  POLICY_DENY,
  POLICY_LIST,
  POLICY_READ,
  POLICY_WRITE,
  type Policy,
} from "./policy-types.ts";

/**
 * Nomad v1.6.1's ACL object (acl/acl.go): policies merged into capability
 * sets and answered per request.
 *
 * Merging, across all the policies (their order does not matter):
 * - namespaces, node pools, host volumes: one capability set per block name
 *   (exact names and globs kept apart). Capabilities are unioned, but a
 *   `deny` clears the set to {deny} and a set holding deny takes nothing
 *   more: deny wins per name.
 * - variables: one set per `namespace\0path` key (a glob in either part makes
 *   it a glob key), PLAIN UNION, deny included: a path denied in one policy
 *   and readable in another stays readable, since the check only asks whether
 *   the set holds the operation (Nomad's quirk, kept; `deny` only empties
 *   the capabilities listed beside it in its own path block).
 * - agent, node, operator, quota, plugin: the most privileged level, deny
 *   first: deny > write > read > list (`scale` grants nothing).
 *
 * Looking up a name: its exact set, else the closest matching glob (see
 * glob.ts closestMatch for the distance and the tie-break), else nothing,
 * which denies. Glob lookups are remembered per ACL (bounded), so a name
 * asked again costs a map lookup.
 */

/** Nomad's ACLClaim: the workload a request acts for (workload identity). */
export interface AclClaim {
  readonly Namespace: string;
  readonly Job: string;
  readonly Group: string;
  readonly Task: string;
}

type CapabilitySet = ReadonlySet<string>;

/** Remembered glob lookups per table and ACL (up to 512 ACLs are cached). */
const MEMO_LIMIT = 256;

/** Capability sets by name: exact names in a map, globs in Nomad's walk order. */
class CapabilityTable {
  private readonly exact = new Map<string, Set<string>>();
  private readonly wildcard = new Map<string, Set<string>>();
  private globs: readonly CompiledGlob<Set<string>>[] = [];
  private readonly memo = new Map<string, CapabilitySet | null>();

  /** The set for a block name, created empty when new (an empty set still shadows the globs). */
  set(name: string, glob: boolean): Set<string> {
    const table = glob ? this.wildcard : this.exact;
    let caps = table.get(name);
    if (!caps) {
      caps = new Set();
      table.set(name, caps);
    }
    return caps;
  }

  freeze(): void {
    this.globs = [...this.wildcard]
      .sort(([a], [b]) => compareBytes(a, b))
      .map(([pattern, caps]) => compileGlob(pattern, caps));
  }

  exactSet(name: string): CapabilitySet | undefined {
    return this.exact.get(name);
  }

  closestGlob(name: string): CapabilitySet | undefined {
    if (this.globs.length === 0) return undefined;
    const known = this.memo.get(name);
    if (known !== undefined) return known ?? undefined;
    const found = closestMatch(matchingGlobs(this.globs, name))?.value;
    if (this.memo.size >= MEMO_LIMIT) this.memo.clear();
    this.memo.set(name, found ?? null);
    return found;
  }

  /** The exact set, else the closest glob's. */
  lookup(name: string): CapabilitySet | undefined {
    return this.exact.get(name) ?? this.closestGlob(name);
  }

  /** Every set, exact names first, as Nomad walks its two trees. */
  *sets(): Iterable<CapabilitySet> {
    yield* this.exact.values();
    yield* this.wildcard.values();
  }

  get size(): number {
    return this.exact.size + this.wildcard.size;
  }

  *keys(): Iterable<string> {
    yield* this.exact.keys();
    yield* this.wildcard.keys();
  }
}

/** Nomad's maxPrivilege: deny first, then write, read, list; anything else ("scale") counts for nothing. */
function maxPrivilege(a: string, b: string): string {
  for (const level of [POLICY_DENY, POLICY_WRITE, POLICY_READ, POLICY_LIST]) {
    if (a === level || b === level) return level;
  }
  return "";
}

/** Adds a block's capabilities to a set, deny winning: Nomad's loop for namespaces, node pools and host volumes. */
function merge(caps: Set<string>, add: readonly string[] | null, deny: string): void {
  if (caps.has(deny)) return;
  for (const cap of add ?? []) {
    if (cap === deny) {
      caps.clear();
      caps.add(deny);
      return;
    }
    caps.add(cap);
  }
}

const WORKLOAD_VARIABLES: CapabilitySet = new Set(["read", "list"]);

export class Acl {
  private readonly namespaces = new CapabilityTable();
  private readonly nodePools = new CapabilityTable();
  private readonly hostVolumes = new CapabilityTable();
  private readonly variables = new CapabilityTable();
  private agent = "";
  private node = "";
  private operator = "";
  private quota = "";
  private plugin = "";

  private constructor(readonly isManagement: boolean) {}

  /** The ACL of a management token: everything allowed. */
  static management(): Acl {
    return new Acl(true);
  }

  /** Nomad's NewACL(false, policies). No policies give an ACL that allows nothing (never "ACLs off"). */
  static compile(policies: readonly Policy[]): Acl {
    const acl = new Acl(false);
    for (const policy of policies) acl.add(policy);
    acl.namespaces.freeze();
    acl.nodePools.freeze();
    acl.hostVolumes.freeze();
    acl.variables.freeze();
    return acl;
  }

  private add(policy: Policy): void {
    for (const ns of policy.Namespaces ?? []) {
      const glob = ns.Name.includes("*");
      const caps = this.namespaces.set(ns.Name, glob);
      // Variables merge before, and regardless of, the namespace's deny.
      for (const path of ns.Variables?.Paths ?? []) {
        const vars = this.variables.set(
          `${ns.Name}\u0000${path.PathSpec}`,
          glob || path.PathSpec.includes("*"),
        );
        for (const cap of path.Capabilities ?? []) vars.add(cap);
      }
      merge(caps, ns.Capabilities, NamespaceCapability.Deny);
    }
    for (const np of policy.NodePools ?? []) {
      merge(this.nodePools.set(np.Name, np.Name.includes("*")), np.Capabilities, NodePoolCapability.Deny);
    }
    for (const hv of policy.HostVolumes ?? []) {
      merge(this.hostVolumes.set(hv.Name, hv.Name.includes("*")), hv.Capabilities, HostVolumeCapability.Deny);
    }
    if (policy.Agent) this.agent = maxPrivilege(this.agent, policy.Agent.Policy);
    if (policy.Node) this.node = maxPrivilege(this.node, policy.Node.Policy);
    if (policy.Operator) this.operator = maxPrivilege(this.operator, policy.Operator.Policy);
    if (policy.Quota) this.quota = maxPrivilege(this.quota, policy.Quota.Policy);
    if (policy.Plugin) this.plugin = maxPrivilege(this.plugin, policy.Plugin.Policy);
  }

  /** Whether `op` is granted in namespace `ns`; `*` passes when any namespace set grants it. */
  allowNamespaceOperation(ns: string, op: string): boolean {
    if (this.isManagement) return true;
    if (ns === "*" && this.anyNamespace((c) => c.has(op))) return true;
    return this.namespaces.lookup(ns)?.has(op) ?? false;
  }

  /** Whether anything is granted in `ns` (a set that is not empty and holds no deny). */
  allowNamespace(ns: string): boolean {
    if (this.isManagement) return true;
    if (ns === "*" && this.anyNamespace(grantsSomething)) return true;
    const caps = this.namespaces.lookup(ns);
    return caps !== undefined && grantsSomething(caps);
  }

  /** Nomad's NamespaceValidator(ops...): any one of `ops` allowed in `ns`. */
  allowNsOpAny(ns: string, ...ops: readonly string[]): boolean {
    return ops.some((op) => this.allowNamespaceOperation(ns, op));
  }

  private anyNamespace(test: (caps: CapabilitySet) => boolean): boolean {
    for (const caps of this.namespaces.sets()) if (test(caps)) return true;
    return false;
  }

  allowNodePoolOperation(pool: string, op: string): boolean {
    if (this.isManagement) return true;
    return this.nodePools.lookup(pool)?.has(op) ?? false;
  }

  allowNodePool(pool: string): boolean {
    if (this.isManagement) return true;
    const caps = this.nodePools.lookup(pool);
    return caps !== undefined && grantsSomething(caps);
  }

  /** A loose check for listing pools: some node pool set without deny (an empty set counts, as in Nomad). */
  allowNodePoolSearch(): boolean {
    if (this.isManagement) return true;
    for (const caps of this.nodePools.sets()) if (!caps.has(NodePoolCapability.Deny)) return true;
    return false;
  }

  allowHostVolumeOperation(name: string, op: string): boolean {
    if (this.isManagement) return true;
    return this.hostVolumes.lookup(name)?.has(op) ?? false;
  }

  allowHostVolume(name: string): boolean {
    if (this.isManagement) return true;
    const caps = this.hostVolumes.lookup(name);
    return caps !== undefined && grantsSomething(caps);
  }

  /**
   * Whether `op` is granted on variable `path` of namespace `ns`: the exact
   * `ns`+`path` rule; else, for a workload (`claim`) of that namespace, read
   * and list on its own paths (`nomad/jobs`, `nomad/jobs/<job>`,
   * `.../<group>`, `.../<task>`); else the closest glob over `ns\0path`.
   * The workload's paths come after the exact rule, so a policy can deny them
   * (CVE-2023-1296), but before the globs, which cannot.
   */
  allowVariableOperation(ns: string, path: string, op: string, claim?: AclClaim): boolean {
    if (this.isManagement) return true;
    const key = `${ns}\u0000${path}`;
    let caps = this.variables.exactSet(key);
    if (caps === undefined && claim && ns === claim.Namespace && isWorkloadPath(path, claim))
      caps = WORKLOAD_VARIABLES;
    caps ??= this.variables.closestGlob(key);
    return caps?.has(op) ?? false;
  }

  /**
   * A loose check that some variables rule could apply in `ns`: a rule whose
   * key starts with `ns` (a prefix, as Nomad's radix seek does; a rule of the
   * namespace glob `*` does not count for a named namespace). `*` asks
   * whether there is any variables rule at all.
   */
  allowVariableSearch(ns: string): boolean {
    if (this.isManagement) return true;
    if (ns === "*") return this.variables.size > 0;
    for (const key of this.variables.keys()) if (key.startsWith(ns)) return true;
    return false;
  }

  allowAgentRead(): boolean {
    return this.isManagement || this.agent === POLICY_WRITE || this.agent === POLICY_READ;
  }

  allowAgentWrite(): boolean {
    return this.isManagement || this.agent === POLICY_WRITE;
  }

  allowNodeRead(): boolean {
    return this.isManagement || this.node === POLICY_WRITE || this.node === POLICY_READ;
  }

  allowNodeWrite(): boolean {
    return this.isManagement || this.node === POLICY_WRITE;
  }

  allowOperatorRead(): boolean {
    return this.isManagement || this.operator === POLICY_WRITE || this.operator === POLICY_READ;
  }

  allowOperatorWrite(): boolean {
    return this.isManagement || this.operator === POLICY_WRITE;
  }

  allowQuotaRead(): boolean {
    return this.isManagement || this.quota === POLICY_WRITE || this.quota === POLICY_READ;
  }

  allowQuotaWrite(): boolean {
    return this.isManagement || this.quota === POLICY_WRITE;
  }

  /** Plugin reads need `read` exactly (a plugin block cannot say write). */
  allowPluginRead(): boolean {
    return this.isManagement || this.plugin === POLICY_READ;
  }

  allowPluginList(): boolean {
    return this.isManagement || this.plugin === POLICY_LIST || this.plugin === POLICY_READ;
  }
}

const grantsSomething = (caps: CapabilitySet) => caps.size > 0 && !caps.has(POLICY_DENY);

function isWorkloadPath(path: string, claim: AclClaim): boolean {
  const jobs = "nomad/jobs";
  return (
    path === jobs ||
    path === `${jobs}/${claim.Job}` ||
    path === `${jobs}/${claim.Job}/${claim.Group}` ||
    path === `${jobs}/${claim.Job}/${claim.Group}/${claim.Task}`
  );
}

/** The singleton for management tokens. */
export const MANAGEMENT_ACL: Acl = Acl.management();

/** Compiles the policies of a token (its own and its roles'), as Nomad's NewACL(false, policies). */
export function compileAcl(policies: readonly Policy[]): Acl {
  return Acl.compile(policies);
}
