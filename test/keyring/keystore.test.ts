import { randomBytes } from "node:crypto";
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { randomKek } from "../../src/keyring/key-wrap.ts";
import { Keystore, KeystoreError } from "../../src/keyring/keystore.ts";
import { useTempDirs } from "../store/helpers.ts";

const ID = "5b3e9a1c-2d4f-4e6a-8b7c-9d0e1f2a3b4c";
const meta = { KeyID: ID, Algorithm: "aes256-gcm", CreateTime: 1_763_800_000_000_000_000 } as const;

describe("Keystore", () => {
  const tempDir = useTempDirs();

  it("keeps a key in <data_dir>/server/keystore/<KeyID>.nks.json, for this user only, wrapped", async () => {
    const dataDir = await tempDir();
    const store = Keystore.inDataDir(dataDir);
    const key = randomBytes(32);
    await store.save(meta, key);
    const dir = join(dataDir, "server", "keystore");
    expect(await readdir(dir)).toEqual([`${ID}.nks.json`]);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(dir, `${ID}.nks.json`))).mode & 0o777).toBe(0o600);
    const text = await readFile(join(dir, `${ID}.nks.json`), "utf8");
    for (const enc of ["base64", "base64url", "hex"] as const) expect(text).not.toContain(key.toString(enc));
    expect(JSON.parse(text)).toMatchObject({
      Meta: meta,
      DEK: { Nonce: expect.any(String) },
      KEK: expect.any(String),
    });
    expect((await store.load(ID))?.equals(key)).toBe(true);
  });

  it("answers undefined for a key it does not have", async () => {
    expect(await Keystore.inDataDir(await tempDir()).load(ID)).toBeUndefined();
  });

  it("with a cluster KEK, wraps under it and keeps no KEK in the file", async () => {
    const dataDir = await tempDir();
    const kek = randomKek();
    const key = randomBytes(32);
    await Keystore.inDataDir(dataDir, kek).save(meta, key);
    const file = JSON.parse(await readFile(join(dataDir, "server", "keystore", `${ID}.nks.json`), "utf8"));
    expect(file.KEK).toBeUndefined();
    expect(file.DEK.KekID).toBe(kek.id);
    expect((await Keystore.inDataDir(dataDir, kek).load(ID))?.equals(key)).toBe(true);
    await expect(Keystore.inDataDir(dataDir).load(ID)).rejects.toThrow(
      /wrapped under cluster KEK [0-9a-f]{16}, and this server has no keyring_kek/,
    );
    await expect(Keystore.inDataDir(dataDir, randomKek()).load(ID)).rejects.toThrow(KeystoreError);
  });

  it("refuses a file that holds another key, and IDs that are not UUIDs", async () => {
    const dataDir = await tempDir();
    const store = Keystore.inDataDir(dataDir);
    await store.save(meta, randomBytes(32));
    const other = "6c4f0b2d-3e5a-4f7b-9c8d-0e1f2a3b4c5d";
    const dir = join(dataDir, "server", "keystore");
    await writeFile(join(dir, `${other}.nks.json`), await readFile(join(dir, `${ID}.nks.json`)));
    await expect(store.load(other)).rejects.toThrow(/does not hold root key/);
    await expect(store.load("../../etc/passwd")).rejects.toThrow(/is not a UUID/);
  });

  it("removes a key's file", async () => {
    const dataDir = await tempDir();
    const store = Keystore.inDataDir(dataDir);
    await store.save(meta, randomBytes(32));
    await store.remove(ID);
    expect(await store.load(ID)).toBeUndefined();
  });
});
