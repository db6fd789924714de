import { activeRootKey } from "../../projections/root-keys.ts";
import type { LeaderService, ServiceContext } from "../services/service.ts";
import type { Timer } from "../util/clock.ts";
import { type KeyCustody, writeNewRootKey } from "./create-root-key.ts";

export type KeyringInitializerDeps = KeyCustody;

/** After a write that failed (the log unreachable): try again this much later. */
const RETRY_MS = 5_000;

/**
 * Nomad's initializeKeyring: as soon as a server leads, it creates the
 * cluster's first root key if no key is active. The material is kept
 * (keystore, memory) before the metadata is written, so no key is ever in
 * the log without its material somewhere; apply refuses the key if another
 * became active meanwhile (two leaders racing), and the loser drops its own.
 * A restarted server finds its key in the table and writes nothing.
 */
export class KeyringInitializer implements LeaderService {
  readonly name = "keyring-initializer";
  private ctx: ServiceContext | undefined;
  private timer: Timer | undefined;
  private pending: Promise<void> = Promise.resolve();

  /** Its custody is the server's: the leader's other keyring services share it. */
  constructor(readonly deps: KeyringInitializerDeps) {}

  start(ctx: ServiceContext): void {
    this.ctx = ctx;
    this.pending = this.initialize(ctx);
  }

  /** Resolves once the current attempt is over (a key exists, or it failed and will retry). */
  settled(): Promise<void> {
    return this.pending;
  }

  async stop(): Promise<void> {
    if (this.timer && this.ctx) this.ctx.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.ctx = undefined;
    await this.pending;
  }

  private async initialize(ctx: ServiceContext): Promise<void> {
    if (this.ctx !== ctx || activeRootKey(ctx.tables.rootKeys)) return;
    const { keystore, clusterKek } = this.deps;
    try {
      const { data, index, outcome } = await writeNewRootKey(
        this.deps,
        { nowMs: ctx.clock.now(), onlyIfNoActiveKey: true, rekey: false },
        (drafts) => ctx.write(drafts),
      );
      const keyId = data.Meta.KeyID;
      if (outcome.status === "rejected") {
        ctx.logger.info({ keyId, reason: outcome.reason }, "root key not created");
        return;
      }
      ctx.logger.info(
        {
          keyId,
          index,
          keystore: keystore?.dir ?? "memory only",
          inLog: clusterKek ? `wrapped under cluster KEK ${clusterKek.id}` : "metadata only",
        },
        "keyring initialized",
      );
    } catch (err) {
      // The append may have landed before it failed: the material stays
      // where it was put, so a key the log names is never lost here.
      ctx.logger.warn({ err, retryMs: RETRY_MS }, "cannot initialize the keyring; retrying");
      if (this.ctx === ctx) {
        this.timer = ctx.clock.setTimeout(() => {
          this.pending = this.initialize(ctx);
        }, RETRY_MS);
      }
    }
  }
}
