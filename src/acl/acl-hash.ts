import { blake2b } from "@noble/hashes/blake2.js";

const utf8 = new TextEncoder();

/**
 * Nomad's `Hash` of an ACL object: BLAKE2b-256 over its user-settable fields
 * written one after another (Go's hash.Write calls), base64 as Go's []byte in
 * JSON. Replication and `nomad acl ... info` use it to see a change;
 * chronomad also skips a role write whose hash did not change.
 */
export function blake2b256(parts: readonly string[]): string {
  const h = blake2b.create({ dkLen: 32 });
  for (const part of parts) h.update(utf8.encode(part));
  return Buffer.from(h.digest()).toString("base64");
}

/** The same, over fields that may be lists (each element written in turn) or booleans ("true"/"false"). */
export function aclHash(parts: readonly (string | boolean | readonly string[])[]): string {
  return blake2b256(
    parts.flatMap((p) => (typeof p === "boolean" ? [String(p)] : typeof p === "string" ? [p] : [...p])),
  );
}
