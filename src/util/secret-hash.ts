import { createHash, timingSafeEqual } from "node:crypto";

/**
 * Secrets (node SecretIDs, ACL token SecretIDs) never reach the log or a
 * table in clear (design rule 5): only their SHA-256 is stored. They are
 * random UUIDs, so an unsalted hash cannot be reversed by guessing, and the
 * hash can serve as a lookup key.
 */
export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/** Whether `secret` hashes to `storedHash`, compared in constant time. */
export function secretMatches(secret: string, storedHash: string): boolean {
  const presented = createHash("sha256").update(secret, "utf8").digest();
  const stored = Buffer.from(storedHash, "hex");
  return stored.length === presented.length && timingSafeEqual(presented, stored);
}
