import { createHash, timingSafeEqual } from "node:crypto";

/**
 * Node SecretIDs never reach the log or a table in clear (design rule 5):
 * only their SHA-256 is stored. A SecretID is a random UUID, so an unsalted
 * hash cannot be reversed by guessing.
 */
export function hashNodeSecret(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/** Whether `secret` hashes to `storedHash`, compared in constant time. */
export function nodeSecretMatches(secret: string, storedHash: string): boolean {
  const presented = createHash("sha256").update(secret, "utf8").digest();
  const stored = Buffer.from(storedHash, "hex");
  return stored.length === presented.length && timingSafeEqual(presented, stored);
}
