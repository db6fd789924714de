import type { Logger } from "pino";
import type { AllocRow } from "../../projections/allocs.ts";
import type { RootKeyTable } from "../../projections/root-keys.ts";
import type { Keyring } from "../keyring/keyring.ts";
import { chooseSigningKey, signIntoCache } from "./alloc-identities.ts";

/**
 * The plan applier's part of Nomad's signAllocIdentities: the key a plan's
 * allocations are stamped with (SigningKeyID, in the record), and the
 * signing of one JWT per task once they are applied. The JWTs go to the
 * server's in-memory cache, from which the client RPC serves them; the log
 * never sees them.
 */
export class PlanIdentities {
  /** The last reason logged for placing without identities: said once, not at every plan. */
  private unsignedReason: string | undefined;

  constructor(
    private readonly keyring: Keyring,
    private readonly logger: Logger,
  ) {}

  /** The active key when this server holds it; otherwise undefined, and why is logged. */
  signingKey(rootKeys: RootKeyTable): string | undefined {
    const choice = chooseSigningKey(this.keyring, rootKeys);
    if ("keyId" in choice) {
      if (this.unsignedReason !== undefined) this.logger.info("workload identities are signed again");
      this.unsignedReason = undefined;
      return choice.keyId;
    }
    if (this.unsignedReason !== choice.reason) {
      this.logger.warn(
        { reason: choice.reason },
        "placing allocations without workload identities: their tasks cannot authenticate as themselves",
      );
      this.unsignedReason = choice.reason;
    }
    return undefined;
  }

  /**
   * Signs the identities of `allocs` (those stamped with a key) where this
   * server signs (its scheduler threads, or the event loop in slices that
   * give it back every few milliseconds). Resolves with how many JWTs were
   * made once all are. An allocation whose key's material went away between
   * the choice and now (a GC) is skipped: the client RPC will say so when it
   * is asked for them.
   */
  sign(allocs: readonly AllocRow[]): Promise<number> {
    return signIntoCache(this.keyring, allocs);
  }
}
