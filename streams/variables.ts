import { type Envelope, schemas } from "./event-schema.ts";

/**
 * Nomad's VariableEncrypted without the indexes (the log index gives those):
 * the only form of a variable that is ever written down (design rule 5).
 * The items are sealed before the event is built; nothing here opens them
 * without the root key, which the log never holds.
 */
export interface VariableEncryptedSpec {
  readonly Namespace: string;
  readonly Path: string;
  /**
   * base64 of nonce (12 bytes) ‖ AES-256-GCM ciphertext ‖ tag (16 bytes) of
   * the items as JSON, with the KeyID's bytes as additional data: Nomad's
   * VariableData.Data layout.
   */
  readonly Data: string;
  /** The root key that sealed Data. */
  readonly KeyID: string;
  /** Unix nanoseconds, as Nomad's int64. Apply keeps an existing variable's CreateTime. */
  readonly CreateTime: number;
  readonly ModifyTime: number;
}

/** Nomad's VarOp. */
export type VarOp = "set" | "cas" | "delete" | "delete-cas";

export const VAR_OPS: readonly VarOp[] = ["set", "cas", "delete", "delete-cas"];

/**
 * Nomad's VarApplyStateRequest (Raft message 50): one variable written or
 * removed. Apply decides the check-and-set again against the table as it
 * stands at this index; a conflict is recorded as the record's rejection
 * (code 409), so of many writers racing on one ModifyIndex exactly one wins.
 */
export interface VariableApplied {
  readonly Op: VarOp;
  readonly Namespace: string;
  readonly Path: string;
  /** set/cas: the encrypted variable; null for deletes. */
  readonly Var: VariableEncryptedSpec | null;
  /** cas/delete-cas: the ModifyIndex the caller expects (0 = must not exist). */
  readonly CasIndex?: number;
}

export type VariableEvent = Envelope<"VariableApplied", VariableApplied>;

export const variableSchemas = schemas({ type: "VariableApplied", version: 1 });
