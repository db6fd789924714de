import { type Acl, compileAcl, MANAGEMENT_ACL } from "./compile-acl.ts";
import { asPolicy } from "./policy-shape.ts";

/**
 * Compiled ACLs by the policies they come from, least recently used out
 * first (Nomad keeps a 2Q LRU of 512 keyed by the hash of the policy list).
 * The key is the set of (Name, ModifyIndex) pairs, sorted and de-duplicated:
 * the order of a token's policies does not matter, and a policy written
 * again has a new ModifyIndex, so its tokens compile anew.
 */

/** A stored policy: a row of the policy table. `Parsed` is the Policy written by parsePolicy. */
export interface CachedPolicy {
  readonly Name: string;
  readonly ModifyIndex: number;
  readonly Parsed: unknown;
}

export const ACL_CACHE_SIZE = 512;

export class AclCache {
  private readonly entries = new Map<string, Acl>();

  constructor(private readonly size = ACL_CACHE_SIZE) {
    if (!Number.isInteger(size) || size < 1)
      throw new RangeError(`ACL cache size must be a positive integer, not ${size}`);
  }

  /** The ACL of a management token. */
  get management(): Acl {
    return MANAGEMENT_ACL;
  }

  /** How many compiled ACLs are held. */
  get length(): number {
    return this.entries.size;
  }

  /**
   * The ACL compiled from `policies` (none: an ACL that allows nothing).
   * Throws TypeError when a `Parsed` is not a policy.
   */
  get(policies: readonly CachedPolicy[]): Acl {
    const unique = new Map<string, CachedPolicy>();
    for (const p of policies) unique.set(`${p.Name}\u0000${p.ModifyIndex}`, p);
    const keys = [...unique.keys()].sort();
    const cacheKey = keys.join("\u0001");
    const hit = this.entries.get(cacheKey);
    if (hit) {
      // Map order is insertion order: moving the entry to the end marks it recently used.
      this.entries.delete(cacheKey);
      this.entries.set(cacheKey, hit);
      return hit;
    }
    const acl = compileAcl(keys.map((k) => asPolicy(unique.get(k)!.Parsed, `policy ${unique.get(k)!.Name}`)));
    this.entries.set(cacheKey, acl);
    if (this.entries.size > this.size) this.entries.delete(this.entries.keys().next().value!);
    return acl;
  }
}
