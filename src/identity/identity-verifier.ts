import type { KeyObject } from "node:crypto";
import type { AllocRow } from "../../projections/allocs.ts";
import type { RootKeyTable } from "../../projections/root-keys.ts";
import { isClientTerminal } from "../../streams/allocs.ts";
import type { Table } from "../store/table.ts";
import {
  checkSignature,
  checkTimes,
  type DecodedJwt,
  decodeJwt,
  IdentityError,
  type PresentedClaims,
  publicKeyOf,
} from "./jwt.ts";

export interface IdentityTables {
  readonly rootKeys: RootKeyTable;
  readonly allocs: Table<AllocRow>;
}

/** A workload identity that passed every check, and the allocation it speaks for. */
export interface VerifiedIdentity {
  readonly claims: PresentedClaims;
  readonly keyId: string;
  readonly alloc: AllocRow;
}

/** Tokens whose signature was checked, kept so a task calling again costs a map lookup. */
const VERIFIED_LIMIT = 4096;

/**
 * Nomad's Encrypter.VerifyClaim then Server.VerifyClaim: EdDSA only, a `kid`
 * naming a root key this cluster has, the signature, the time claims; then
 * the allocation must exist and not be client-terminal (Nomad 1.5.11+, so
 * poststop tasks of a stopped allocation keep their access). Public keys come
 * from the root_keys table, not from key material: every server can verify,
 * even one that could not obtain the material to sign.
 */
export class IdentityVerifier {
  private readonly publicKeys = new Map<string, { readonly x: string; readonly key: KeyObject }>();
  private readonly verified = new Map<string, DecodedJwt>();

  constructor(private readonly tables: IdentityTables) {}

  /** Throws IdentityError with Nomad's reason when `token` does not identify a live workload. */
  verify(token: string, nowMs: number): VerifiedIdentity {
    let jwt = this.verified.get(token);
    const known = jwt !== undefined;
    jwt ??= decodeJwt(token);
    const row = this.tables.rootKeys.get(jwt.keyId);
    // A deleted key revokes every identity it signed, cached or not.
    if (!row) throw new IdentityError(`failed to verify token: no such key "${jwt.keyId}" in keyring`);
    if (!known) {
      checkSignature(jwt, this.publicKey(jwt.keyId, row.SigningKey));
      if (this.verified.size >= VERIFIED_LIMIT) this.verified.delete(this.verified.keys().next().value!);
      this.verified.set(token, jwt);
    }
    checkTimes(jwt.claims, Math.floor(nowMs / 1000));
    const alloc = this.tables.allocs.get(jwt.claims.nomad_allocation_id);
    if (!alloc?.Job) throw new IdentityError("allocation does not exist");
    if (isClientTerminal(alloc)) throw new IdentityError("allocation is terminal");
    return { claims: jwt.claims, keyId: jwt.keyId, alloc };
  }

  private publicKey(keyId: string, signing: { readonly Curve: "Ed25519"; readonly X: string }): KeyObject {
    const held = this.publicKeys.get(keyId);
    if (held?.x === signing.X) return held.key;
    const key = publicKeyOf({ Algorithm: "EdDSA", Curve: signing.Curve, X: signing.X });
    if (this.publicKeys.size >= 64) this.publicKeys.clear();
    this.publicKeys.set(keyId, { x: signing.X, key });
    return key;
  }
}
