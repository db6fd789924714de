import * as crypto from "node:crypto";

/**
 * SHA-256 of a secret. crypto.hash (Node 20.12 and later; `engines` allows
 * 20.11) makes no Hash object: half the cost of createHash, paid on every
 * client call a node authenticates.
 */
const sha256: (text: string) => Buffer =
  typeof crypto.hash === "function"
    ? (text) => crypto.hash("sha256", text, "buffer")
    : (text) => crypto.createHash("sha256").update(text, "utf8").digest();

/**
 * Secrets (node SecretIDs, ACL token SecretIDs) never reach the log or a
 * table in clear (design rule 5): only their SHA-256 is stored. They are
 * random UUIDs, so an unsalted hash cannot be reversed by guessing, and the
 * hash can serve as a lookup key.
 */
export function hashSecret(secret: string): string {
  return sha256(secret).toString("hex");
}

/** Whether `secret` hashes to `storedHash`, compared in constant time. */
export function secretMatches(secret: string, storedHash: string): boolean {
  const presented = sha256(secret);
  const stored = Buffer.from(storedHash, "hex");
  return stored.length === presented.length && crypto.timingSafeEqual(presented, stored);
}
