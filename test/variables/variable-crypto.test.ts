import { createDecipheriv, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Keyring } from "../../src/keyring/keyring.ts";
import { rootKeyMaterial } from "../../src/keyring/root-key-material.ts";
import {
  decryptItems,
  encryptItems,
  VariableDecryptError,
  VariableKeyUnavailable,
} from "../../src/variables/variable-crypto.ts";

const KEY_A = "5b3e9a1c-2d4f-4e6a-8b7c-9d0e1f2a3b4c";
const KEY_B = "0f3e9a1c-2d4f-4e6a-8b7c-9d0e1f2a3b4d";

async function keyring(...ids: string[]) {
  const ring = new Keyring();
  for (const id of ids) ring.add(await rootKeyMaterial(id, randomBytes(32)));
  return ring;
}

describe("variable items sealing", () => {
  it("round-trips items, a fresh nonce each time", async () => {
    const ring = await keyring(KEY_A);
    const items = { password: "hunter2", __proto__: "still an item", empty: "" };
    const a = encryptItems(ring, KEY_A, items);
    const b = encryptItems(ring, KEY_A, items);
    expect(a.KeyID).toBe(KEY_A);
    expect(a.Data).not.toBe(b.Data);
    const opened = decryptItems(ring, a);
    expect(Object.entries(opened).sort()).toEqual(Object.entries(items).sort());
    expect(Buffer.from(a.Data, "base64").includes(Buffer.from("hunter2"))).toBe(false);
  });

  it("is Nomad's layout: nonce(12) ‖ AES-256-GCM(json items) ‖ tag(16), the KeyID as additional data", async () => {
    const ring = await keyring(KEY_A);
    const sealed = Buffer.from(encryptItems(ring, KEY_A, { b: "2", a: "1" }).Data, "base64");
    const decipher = createDecipheriv("aes-256-gcm", ring.get(KEY_A)!.key, sealed.subarray(0, 12));
    decipher.setAAD(Buffer.from(KEY_A));
    decipher.setAuthTag(sealed.subarray(sealed.length - 16));
    const text = Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]);
    // Keys sorted, as Go's encoding/json writes a map.
    expect(text.toString()).toBe('{"a":"1","b":"2"}');
  });

  it("refuses, never guesses: a key this server lacks, another key ID, altered data", async () => {
    const ring = await keyring(KEY_A, KEY_B);
    const sealed = encryptItems(ring, KEY_A, { k: "v" });
    const other = await keyring(KEY_B);
    expect(() => decryptItems(other, sealed)).toThrow(VariableKeyUnavailable);
    expect(() => decryptItems(other, sealed)).toThrow(`the key ${KEY_A} is not available on this server`);
    expect(() => encryptItems(other, KEY_A, { k: "v" })).toThrow(VariableKeyUnavailable);
    // Moved under another key's ID: the additional data no longer matches.
    expect(() => decryptItems(ring, { ...sealed, KeyID: KEY_B })).toThrow(VariableDecryptError);
    const bytes = Buffer.from(sealed.Data, "base64");
    bytes[14]! ^= 1;
    expect(() => decryptItems(ring, { ...sealed, Data: bytes.toString("base64") })).toThrow(
      VariableDecryptError,
    );
    expect(() => decryptItems(ring, { ...sealed, Data: "AAAA" })).toThrow(/malformed/);
  });
});
