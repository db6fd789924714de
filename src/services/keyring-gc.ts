import { activeRootKey, rotationBlockedBy } from "../../projections/root-keys.ts";
import { collectableRootKeys, rootKeyDeleteDrafts } from "../gc/collect-root-keys.ts";
import { type KeyCustody, writeNewRootKey } from "../keyring/create-root-key.ts";
import type { Timer } from "../util/clock.ts";
import type { LeaderService, ServiceContext } from "./service.ts";

/** Nomad's defaults (nomad/config.go): a pass every 10m, keys kept 1h, rotated after 30 days. */
export const ROOT_KEY_GC_DEFAULTS = {
  intervalMs: 10 * 60_000,
  gcThresholdMs: 3_600_000,
  rotationThresholdMs: 720 * 3_600_000,
} as const;

/** What one pass did. */
export type KeyringGcPass =
  | { readonly rotated: string }
  | { readonly rotated?: undefined; readonly deleted: readonly string[] };

/**
 * The leader's periodic root key job (Nomad's CoreJobRootKeyRotateOrGC):
 * every root_key_gc_interval it rotates the active key once it is older
 * than root_key_rotation_threshold (not a full rotation, and the pass ends
 * there, as in Nomad); otherwise it deletes the keys that are neither
 * active nor rekeying, older than root_key_gc_threshold and used by nothing
 * (src/gc/collect-root-keys.ts). Ages are read on the clock; apply checks
 * the active key again.
 */
export class KeyringGc implements LeaderService {
  readonly name = "keyring-gc";
  private ctx: ServiceContext | undefined;
  private timer: Timer | undefined;
  private running: Promise<unknown> = Promise.resolve();

  constructor(private readonly custody: KeyCustody) {}

  start(ctx: ServiceContext): void {
    this.ctx = ctx;
    this.schedule(ctx);
  }

  async stop(): Promise<void> {
    if (this.timer && this.ctx) this.ctx.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.ctx = undefined;
    await this.running;
  }

  /** Resolves once the pass in progress, if any, is over (tests). */
  settled(): Promise<unknown> {
    return this.running;
  }

  private schedule(ctx: ServiceContext): void {
    if (this.ctx !== ctx) return;
    this.timer = ctx.clock.setTimeout(() => {
      this.timer = undefined;
      this.running = this.pass(ctx)
        .catch((err: unknown) => {
          ctx.logger.warn({ err }, "root key rotation or GC failed; retrying at the next interval");
        })
        .finally(() => this.schedule(ctx));
    }, settings(ctx).intervalMs);
  }

  /** One pass: rotate an old active key, or else collect unused ones. */
  async pass(ctx: ServiceContext): Promise<KeyringGcPass> {
    const rotated = await this.rotateIfOld(ctx);
    if (rotated) return { rotated };
    const deleted = collectableRootKeys(ctx.tables, {
      nowMs: ctx.clock.now(),
      thresholdMs: settings(ctx).gcThresholdMs,
    });
    if (deleted.length === 0) return { deleted };
    // No cause: what makes a key collectable is its age, read on the clock.
    const { outcomes } = await ctx.write(rootKeyDeleteDrafts(deleted));
    const done = deleted.filter((_, i) => outcomes[i]?.status === "applied");
    ctx.logger.info({ keyIds: done }, `root key GC: deleted ${done.length} unused root key(s)`);
    return { deleted: done };
  }

  private async rotateIfOld(ctx: ServiceContext): Promise<string | undefined> {
    const { rootKeys } = ctx.tables;
    const active = activeRootKey(rootKeys);
    const nowMs = ctx.clock.now();
    if (!active || active.CreateTime > (nowMs - settings(ctx).rotationThresholdMs) * 1e6) return undefined;
    const blocked = rotationBlockedBy(rootKeys);
    if (blocked) {
      ctx.logger.info({ keyId: active.KeyID }, `root key is due for rotation, but ${blocked}`);
      return undefined;
    }
    const { data, outcome } = await writeNewRootKey(
      this.custody,
      { nowMs, onlyIfNoActiveKey: false, rekey: false },
      (drafts) => ctx.write(drafts),
    );
    const keyId = data.Meta.KeyID;
    if (outcome.status === "rejected") {
      ctx.logger.warn({ keyId, reason: outcome.reason }, "root key rotation refused");
      return undefined;
    }
    ctx.logger.info(
      { keyId, previous: active.KeyID, index: outcome.index },
      "root key rotated: the active key was older than root_key_rotation_threshold",
    );
    return keyId;
  }
}

/** The server's settings; a test's partial config falls back to Nomad's defaults. */
function settings(ctx: ServiceContext) {
  const c = ctx.config;
  return {
    intervalMs: c.rootKeyGcInterval ?? ROOT_KEY_GC_DEFAULTS.intervalMs,
    gcThresholdMs: c.rootKeyGcThreshold ?? ROOT_KEY_GC_DEFAULTS.gcThresholdMs,
    rotationThresholdMs: c.rootKeyRotationThreshold ?? ROOT_KEY_GC_DEFAULTS.rotationThresholdMs,
  };
}
