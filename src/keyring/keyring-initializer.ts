import { randomUUID } from "node:crypto";
import { activeRootKey } from "../../projections/root-keys.ts";
import { AES256_GCM, type RootKeyCreated, type RootKeyMetaSpec } from "../../streams/keyring.ts";
import type { LeaderService, ServiceContext } from "../services/service.ts";
import type { Timer } from "../util/clock.ts";
import { type KeyEncryptionKey, wrapKey } from "./key-wrap.ts";
import type { Keyring } from "./keyring.ts";
import type { Keystore } from "./keystore.ts";
import { newRootKey } from "./root-key-material.ts";

export interface KeyringInitializerDeps {
  readonly keyring: Keyring;
  /** Absent with the memory log: the material then lives in memory only. */
  readonly keystore?: Keystore;
  readonly clusterKek?: KeyEncryptionKey;
}

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

  constructor(private readonly deps: KeyringInitializerDeps) {}

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
    const { keyring, keystore, clusterKek } = this.deps;
    let keyId: string | undefined;
    try {
      const material = await newRootKey(randomUUID());
      const meta: RootKeyMetaSpec = {
        KeyID: material.keyId,
        Algorithm: AES256_GCM,
        CreateTime: ctx.clock.now() * 1e6,
        State: "active",
      };
      keyId = meta.KeyID;
      const data: RootKeyCreated = {
        Meta: meta,
        SigningKey: material.signingPublicKey,
        Wrapped: clusterKek ? wrapKey(clusterKek, meta.KeyID, material.key) : null,
        OnlyIfNoActiveKey: true,
      };
      await keystore?.save(meta, material.key);
      keyring.add(material);
      const { index, outcomes } = await ctx.write([{ type: "RootKeyCreated", v: 1, data }]);
      const outcome = outcomes[0];
      if (outcome?.status === "rejected") {
        keyring.delete(meta.KeyID);
        await keystore?.remove(meta.KeyID);
        ctx.logger.info({ keyId: meta.KeyID, reason: outcome.reason }, "root key not created");
        return;
      }
      ctx.logger.info(
        {
          keyId: meta.KeyID,
          index,
          keystore: keystore?.dir ?? "memory only",
          inLog: clusterKek ? `wrapped under cluster KEK ${clusterKek.id}` : "metadata only",
        },
        "keyring initialized",
      );
    } catch (err) {
      // The append may have landed before it failed: the material stays
      // where it was put, so a key the log names is never lost here.
      ctx.logger.warn({ err, keyId, retryMs: RETRY_MS }, "cannot initialize the keyring; retrying");
      if (this.ctx === ctx) {
        this.timer = ctx.clock.setTimeout(() => {
          this.pending = this.initialize(ctx);
        }, RETRY_MS);
      }
    }
  }
}
