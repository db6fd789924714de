import { variablePathError } from "../../projections/variables.ts";
import { ApiError } from "../api/api-error.ts";
import type { VariableItems } from "./variable-crypto.ts";

export { variablePathError } from "../../projections/variables.ts";

/** Nomad's maxVariableSize (1.5.0+): the items' keys and values, in bytes. Not configurable. */
export const MAX_VARIABLE_SIZE = 65536;

/** Nomad's VariableItems.Size(): the bytes of every key and value (Go's len of a string is its UTF-8 length). */
export function itemsSize(items: VariableItems): number {
  let size = 0;
  for (const k in items) size += Buffer.byteLength(k, "utf8") + Buffer.byteLength(items[k]!, "utf8");
  return size;
}

/**
 * Nomad's VariableDecrypted.Validate, in its order and words: the namespace,
 * the items, their size, then the path. Undefined when the variable may be
 * written.
 */
export function variableError(v: {
  readonly Namespace: string;
  readonly Path: string;
  readonly Items: VariableItems;
}): string | undefined {
  if (v.Namespace === "*") return 'can not target wildcard ("*")namespace';
  if (Object.keys(v.Items).length === 0) return "empty variables are invalid";
  if (itemsSize(v.Items) > MAX_VARIABLE_SIZE) return "variables are limited to 64KiB in total size";
  return variablePathError(v.Path);
}

const UINT64_MAX = 18446744073709551615n;

/**
 * Nomad's parseCAS: `?cas=` absent or empty means no check-and-set;
 * otherwise it must be a uint64, in strconv.ParseUint's words. An index past
 * what a JS number holds exactly can never match a variable's, so it is kept
 * only as a value no ModifyIndex equals.
 */
export function parseCas(query: Readonly<Record<string, unknown>>): number | undefined {
  let raw = query.cas;
  if (Array.isArray(raw)) raw = raw[0];
  if (raw === undefined || raw === null || raw === "") return undefined;
  const text = String(raw);
  if (!/^[0-9]+$/.test(text)) {
    throw ApiError.badRequest(
      `can not parse cas: strconv.ParseUint: parsing ${JSON.stringify(text)}: invalid syntax`,
    );
  }
  if (BigInt(text) > UINT64_MAX) {
    throw ApiError.badRequest(
      `can not parse cas: strconv.ParseUint: parsing ${JSON.stringify(text)}: value out of range`,
    );
  }
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : Number.POSITIVE_INFINITY;
}
