/**
 * What login builds per auth method from its provider (key sets, discovery
 * documents), kept between logins: Nomad keeps its OIDC providers the same
 * way (`lib/auth/oidc/provider.go` ProviderCache), rebuilt when the method
 * changes and every 6 hours in case the provider changed.
 *
 * An entry belongs to a method's name and ModifyIndex, so an updated method
 * never uses what its previous config built. A build that fails is not kept:
 * a provider that was down is asked again on the next login.
 */

const DEFAULT_TTL_MS = 6 * 3600_000;
/** More methods than a cluster has; a bound all the same. */
const MAX_ENTRIES = 256;

interface Entry<T> {
  readonly modifyIndex: number;
  readonly createdAt: number;
  readonly value: Promise<T>;
}

export class MethodCache<T> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(
    private readonly now: () => number,
    private readonly ttlMs: number = DEFAULT_TTL_MS,
  ) {}

  /** The value for this method version, built by `build` when missing, stale or of another version. */
  get(name: string, modifyIndex: number, build: () => Promise<T>): Promise<T> {
    const now = this.now();
    const cached = this.entries.get(name);
    if (cached && cached.modifyIndex === modifyIndex && now - cached.createdAt < this.ttlMs)
      return cached.value;
    for (const [key, entry] of this.entries) {
      if (now - entry.createdAt >= this.ttlMs) this.entries.delete(key);
    }
    this.entries.delete(name);
    if (this.entries.size >= MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    let value: Promise<T>;
    try {
      value = build();
    } catch (err) {
      return Promise.reject(err);
    }
    const entry: Entry<T> = { modifyIndex, createdAt: now, value };
    this.entries.set(name, entry);
    value.catch(() => {
      if (this.entries.get(name) === entry) this.entries.delete(name);
    });
    return value;
  }

  forget(name: string): void {
    this.entries.delete(name);
  }
}
