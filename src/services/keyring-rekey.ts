import { filter, type Subscription } from "rxjs";
import { activeRootKey, type RootKeyRow, rekeyingRootKeys } from "../../projections/root-keys.ts";
import { type VariableRow, type VariableTable, variableKey } from "../../projections/variables.ts";
import type { RootKeyRekeyFinished } from "../../streams/keyring.ts";
import type { VariableApplied } from "../../streams/variables.ts";
import type { Keyring } from "../keyring/keyring.ts";
import { skipWhile, walkInSlices } from "../query/sliced-walk.ts";
import { compareStrings } from "../store/sorted-list.ts";
import type { Draft } from "../store/writer.ts";
import type { Timer } from "../util/clock.ts";
import { decryptItems, encryptItems } from "../variables/variable-crypto.ts";
import type { LeaderService, ServiceContext } from "./service.ts";

export interface KeyringRekeyOptions {
  /** Variables re-encrypted per second at most: Nomad's rate.Limiter(100) in variablesRekey. */
  readonly perSecond: number;
  /** Variables per append: each is its own record (a CAS of its own), appended together. */
  readonly batch: number;
  /** When some variables could not be re-encrypted (material missing, a refusal): the next pass this much later. */
  readonly retryMs: number;
}

export const REKEY_DEFAULTS: KeyringRekeyOptions = { perSecond: 100, batch: 20, retryMs: 30_000 };

/** What one pass over the variables did. */
interface PassResult {
  readonly total: number;
  readonly rekeyed: number;
  /** CAS conflicts: someone wrote the variable meanwhile, under the active key. */
  readonly conflicts: number;
  readonly failed: number;
}

/**
 * The full rekey after `rotate -full` (Nomad's CoreJobVariablesRekey), as a
 * leader service: while any root key is `rekeying`, it re-encrypts every
 * variable such a key sealed under the active key, by writing
 * VariableApplied {Op: "cas"} at the row's ModifyIndex, so a concurrent
 * write wins and its conflict is ignored (that write used the active key).
 * It reads the table in slices, at most `perSecond` variables a second, and
 * logs `rekey: N of M variables`. A key none of whose variables remain is
 * marked inactive (RootKeyRekeyFinished), which Nomad leaves to no one; key
 * GC may then collect it. It is driven by the root_keys table, not by a
 * request, so a new leader resumes whatever is still `rekeying`.
 */
export class KeyringRekey implements LeaderService {
  readonly name = "keyring-rekey";
  private readonly options: KeyringRekeyOptions;
  private ctx: ServiceContext | undefined;
  private subscription: Subscription | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private timer: Timer | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly keyring: Keyring,
    options: Partial<KeyringRekeyOptions> = {},
  ) {
    this.options = { ...REKEY_DEFAULTS, ...options };
  }

  start(ctx: ServiceContext): void {
    this.ctx = ctx;
    this.subscription = ctx.store.change$
      .pipe(
        filter((c) => c.table === "root_keys" && (c.after as RootKeyRow | undefined)?.State === "rekeying"),
      )
      .subscribe(() => this.kick(ctx));
    this.kick(ctx);
  }

  async stop(): Promise<void> {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    const ctx = this.ctx;
    this.ctx = undefined;
    if (this.timer && ctx) ctx.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.wake?.();
    await this.running;
  }

  /** Resolves once no rekey is running (a retry may still be armed). Tests. */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }

  private kick(ctx: ServiceContext): void {
    if (this.ctx !== ctx) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) {
      ctx.clock.clearTimeout(this.timer);
      this.timer = undefined;
      this.wake = undefined;
    }
    // After the apply that kicked it: a rotation marks the old keys
    // rekeying before it puts the new active key, in the same apply.
    this.running = Promise.resolve()
      .then(() => this.rekey(ctx))
      .catch((err: unknown) => {
        ctx.logger.warn({ err, retryMs: this.options.retryMs }, "rekey: failed; trying again later");
        this.retryLater(ctx);
      })
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.kick(ctx);
        }
      });
  }

  private retryLater(ctx: ServiceContext): void {
    if (this.ctx !== ctx || this.timer) return;
    this.timer = ctx.clock.setTimeout(() => {
      this.timer = undefined;
      this.kick(ctx);
    }, this.options.retryMs);
  }

  private async rekey(ctx: ServiceContext): Promise<void> {
    for (;;) {
      if (this.ctx !== ctx) return;
      const keys = rekeyingRootKeys(ctx.tables.rootKeys);
      if (keys.length === 0) return;
      const result = await this.pass(ctx, keys);
      if (this.ctx !== ctx) return;
      await this.finish(ctx, keys);
      const left = rekeyingRootKeys(ctx.tables.rootKeys);
      if (left.length === 0) return;
      // Another pass only for what is left after conflicts; nothing to do
      // but wait when variables stayed as they were.
      if (result.failed > 0 || result.rekeyed + result.conflicts === 0) {
        this.retryLater(ctx);
        return;
      }
    }
  }

  /** Re-encrypts, in key order, every variable still sealed by one of `keys`. */
  private async pass(ctx: ServiceContext, keys: readonly RootKeyRow[]): Promise<PassResult> {
    const { variables, rootKeys } = ctx.tables;
    const byId = new Map(keys.map((k) => [k.KeyID, k]));
    const total = keys.reduce((n, k) => n + variables.countBy("key_id", k.KeyID), 0);
    let rekeyed = 0;
    let conflicts = 0;
    let failed = 0;
    if (total === 0) return { total, rekeyed, conflicts, failed };
    const active = activeRootKey(rootKeys);
    const unavailable = !active
      ? "there is no active root key"
      : !this.keyring.has(active.KeyID)
        ? `this leader does not hold the material of the active root key ${active.KeyID}`
        : undefined;
    if (!active || unavailable) {
      ctx.logger.warn(
        { keyIds: [...byId.keys()], retryMs: this.options.retryMs },
        `rekey: waiting: ${unavailable}`,
      );
      return { total, rekeyed, conflicts, failed: total };
    }
    ctx.logger.info(
      { keyIds: [...byId.keys()], activeKeyId: active.KeyID },
      `rekey: 0 of ${total} variables`,
    );
    const reasons = new Map<string, number>();
    let after: string | undefined;
    let nextAt = 0;
    for (;;) {
      const rows = await nextBatch(variables, after, (row) => byId.has(row.KeyID), this.options.batch);
      if (rows.length === 0 || this.ctx !== ctx) break;
      const last = rows[rows.length - 1]!;
      after = variableKey(last.Namespace, last.Path);
      const drafts: Draft[] = [];
      const nowNs = ctx.clock.now() * 1e6;
      for (const row of rows) {
        try {
          const items = decryptItems(this.keyring, row);
          const sealed = encryptItems(this.keyring, active.KeyID, items);
          const data: VariableApplied = {
            Op: "cas",
            Namespace: row.Namespace,
            Path: row.Path,
            // Nomad's rekey goes through Variables.Apply, which stamps ModifyTime.
            Var: {
              Namespace: row.Namespace,
              Path: row.Path,
              Data: sealed.Data,
              KeyID: sealed.KeyID,
              CreateTime: row.CreateTime,
              ModifyTime: nowNs,
            },
            CasIndex: row.ModifyIndex,
          };
          const rotation = byId.get(row.KeyID)!;
          // The rotation that marked the key rekeying is why this variable changes.
          drafts.push({
            type: "VariableApplied",
            v: 1,
            data,
            cause: { index: rotation.ModifyIndex, type: "RootKeyCreated" },
          });
        } catch (err) {
          failed++;
          const reason = (err as Error).message;
          reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
        }
      }
      if (drafts.length === 0) continue;
      // Nomad's limiter: the next append waits until this one's share of the rate has passed.
      const waitMs = nextAt - ctx.clock.now();
      if (waitMs > 0) await this.sleep(ctx, waitMs);
      if (this.ctx !== ctx) break;
      const { outcomes } = await ctx.write(drafts);
      nextAt = ctx.clock.now() + (drafts.length * 1000) / this.options.perSecond;
      for (const outcome of outcomes) {
        if (outcome.status === "applied") rekeyed++;
        else if (outcome.code === 409) conflicts++;
        else {
          failed++;
          reasons.set(outcome.reason, (reasons.get(outcome.reason) ?? 0) + 1);
        }
      }
      ctx.logger.info({ rekeyed, conflicts, failed }, `rekey: ${rekeyed + conflicts} of ${total} variables`);
    }
    if (failed > 0) {
      ctx.logger.warn(
        { failed, reasons: Object.fromEntries(reasons), retryMs: this.options.retryMs },
        `rekey: ${failed} of ${total} variables could not be re-encrypted; trying them again later`,
      );
    }
    return { total, rekeyed, conflicts, failed };
  }

  /** Marks inactive the keys none of whose variables remain. */
  private async finish(ctx: ServiceContext, keys: readonly RootKeyRow[]): Promise<void> {
    const { variables, rootKeys } = ctx.tables;
    const drafts: Draft[] = [];
    for (const key of keys) {
      if (rootKeys.get(key.KeyID)?.State !== "rekeying" || variables.countBy("key_id", key.KeyID) > 0)
        continue;
      const data: RootKeyRekeyFinished = { KeyID: key.KeyID };
      drafts.push({
        type: "RootKeyRekeyFinished",
        v: 1,
        data,
        cause: { index: key.ModifyIndex, type: "RootKeyCreated" },
      });
    }
    if (drafts.length === 0) return;
    const { outcomes } = await ctx.write(drafts);
    drafts.forEach((d, i) => {
      const keyId = (d.data as RootKeyRekeyFinished).KeyID;
      const outcome = outcomes[i];
      if (outcome?.status === "applied") ctx.logger.info({ keyId }, "rekey: done; the key is now inactive");
    });
  }

  private sleep(ctx: ServiceContext, ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      this.timer = ctx.clock.setTimeout(() => {
        this.timer = undefined;
        this.wake = undefined;
        resolve();
      }, ms);
    });
  }
}

/**
 * Up to `limit` rows after key `after` (key order) that `accept` takes, read
 * in slices that yield to the event loop.
 */
async function nextBatch(
  table: VariableTable,
  after: string | undefined,
  accept: (row: VariableRow) => boolean,
  limit: number,
): Promise<VariableRow[]> {
  const key = table.spec.key;
  const from = (k: string | undefined) =>
    k === undefined
      ? table.withPrefix("")
      : skipWhile(table.withPrefix("", k), (r) => compareStrings(key(r), k) <= 0);
  const rows: VariableRow[] = [];
  await walkInSlices(
    from(after),
    (row) => {
      if (accept(row)) rows.push(row);
      return rows.length < limit;
    },
    (last) => from(key(last)),
  );
  return rows;
}
