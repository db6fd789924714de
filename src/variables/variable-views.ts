import type { VariableRow } from "../../projections/variables.ts";
import type { VariableItems } from "./variable-crypto.ts";

/** Nomad's VariableMetadata: the list stub, and the head of every variable answer. */
export interface VariableMetadataView {
  readonly Namespace: string;
  readonly Path: string;
  readonly CreateIndex: number;
  readonly CreateTime: number;
  readonly ModifyIndex: number;
  readonly ModifyTime: number;
}

/** Nomad's VariableDecrypted as JSON: the metadata and the items (null when redacted or absent). */
export interface VariableDecryptedView extends VariableMetadataView {
  readonly Items: VariableItems | null;
}

export function variableMetadata(row: VariableMetadataView): VariableMetadataView {
  return {
    Namespace: row.Namespace,
    Path: row.Path,
    CreateIndex: row.CreateIndex,
    CreateTime: row.CreateTime,
    ModifyIndex: row.ModifyIndex,
    ModifyTime: row.ModifyTime,
  };
}

export function decryptedView(
  meta: VariableMetadataView,
  items: VariableItems | null,
): VariableDecryptedView {
  return { ...variableMetadata(meta), Items: items };
}

/**
 * Nomad's "plausible zero value" for a variable that is not there: the
 * conflict a check-and-set expecting one gets back.
 */
export function absentVariable(namespace: string, path: string): VariableDecryptedView {
  return {
    Namespace: namespace,
    Path: path,
    CreateIndex: 0,
    CreateTime: 0,
    ModifyIndex: 0,
    ModifyTime: 0,
    Items: null,
  };
}

/** What listing and filtering see of a row: its metadata and the key that seals it, never Data. */
export type VariableListRow = VariableMetadataView & { readonly KeyID: string };

export function listRow(row: VariableRow): VariableListRow {
  return { ...variableMetadata(row), KeyID: row.KeyID };
}
