import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { KeyUnwrapError, parseKek, randomKek, unwrapKey, wrapKey } from "../../src/keyring/key-wrap.ts";

const ID = "5b3e9a1c-2d4f-4e6a-8b7c-9d0e1f2a3b4c";
const OTHER = "6c4f0b2d-3e5a-4f7b-9c8d-0e1f2a3b4c5d";

describe("key wrapping", () => {
  it("round-trips a key, and the wrapped form shows neither the key nor the KEK", () => {
    const kek = randomKek();
    const key = randomBytes(32);
    const wrapped = wrapKey(kek, ID, key);
    expect(wrapped.KekID).toBe(kek.id);
    const text = JSON.stringify(wrapped);
    for (const secret of [key, kek.key]) {
      for (const enc of ["base64", "base64url", "hex"] as const)
        expect(text).not.toContain(secret.toString(enc));
    }
    expect(unwrapKey(kek, ID, wrapped).equals(key)).toBe(true);
  });

  it("refuses another KEK, naming both fingerprints", () => {
    const kek = randomKek();
    const other = randomKek();
    const wrapped = wrapKey(kek, ID, randomBytes(32));
    expect(() => unwrapKey(other, ID, wrapped)).toThrow(
      new KeyUnwrapError(
        `root key ${ID} is wrapped under KEK ${kek.id}, but the configured KEK is ${other.id}`,
      ),
    );
  });

  it("refuses a tampered blob, or one moved onto another key ID", () => {
    const kek = randomKek();
    const wrapped = wrapKey(kek, ID, randomBytes(32));
    const sealed = Buffer.from(wrapped.Ciphertext, "base64");
    sealed[0]! ^= 1;
    const tampered = { ...wrapped, Ciphertext: sealed.toString("base64") };
    expect(() => unwrapKey(kek, ID, tampered)).toThrow(/does not authenticate/);
    expect(() => unwrapKey(kek, OTHER, wrapped)).toThrow(/does not authenticate/);
  });

  it("takes a KEK as 32 bytes of base64, and never echoes a bad one", () => {
    const good = randomBytes(32);
    expect(parseKek(`${good.toString("base64")}\n`, "k").key.equals(good)).toBe(true);
    for (const bad of [randomBytes(16).toString("base64"), "not base64 at all!", ""]) {
      let message = "";
      try {
        parseKek(bad, "keyring_kek");
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/^keyring_kek must be 32 random bytes encoded in base64/);
      if (bad) expect(message).not.toContain(bad);
    }
  });
});
