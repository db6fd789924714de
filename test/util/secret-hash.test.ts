import { createHash, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { hashSecret, secretMatches } from "../../src/util/secret-hash.ts";

describe("secret hashes", () => {
  it("are the SHA-256 of the secret, in hex, and match only that secret", () => {
    const secret = randomUUID();
    const stored = hashSecret(secret);
    expect(stored).toBe(createHash("sha256").update(secret, "utf8").digest("hex"));
    expect(secretMatches(secret, stored)).toBe(true);
    expect(secretMatches(randomUUID(), stored)).toBe(false);
    expect(secretMatches(secret, "abcd")).toBe(false);
  });
});
