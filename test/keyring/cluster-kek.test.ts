import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { loadClusterKek } from "../../src/keyring/cluster-kek.ts";
import { useTempDirs } from "../store/helpers.ts";

describe("cluster KEK settings", () => {
  const tempDir = useTempDirs();

  it("reads the KEK from the environment or from a file", async () => {
    const kek = randomBytes(32);
    const fromEnv = await loadClusterKek(
      await loadConfig([], { CHRONOMAD_KEYRING_KEK: kek.toString("base64") }),
    );
    expect(fromEnv?.key.equals(kek)).toBe(true);
    const file = join(await tempDir(), "kek");
    await writeFile(file, `${kek.toString("base64")}\n`);
    const fromFile = await loadClusterKek(await loadConfig(["--keyring-kek-file", file], {}));
    expect(fromFile?.id).toBe(fromEnv?.id);
    expect(await loadClusterKek(await loadConfig([], {}))).toBeUndefined();
  });

  it("refuses a malformed KEK without echoing it, and both settings at once", async () => {
    const short = randomBytes(16).toString("base64");
    const config = await loadConfig([], { CHRONOMAD_KEYRING_KEK: short });
    const err = await loadClusterKek(config).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/^keyring_kek \(CHRONOMAD_KEYRING_KEK\) must be 32 random bytes/);
    expect((err as Error).message).not.toContain(short);
    await expect(
      loadClusterKek(await loadConfig(["--keyring-kek-file", join(await tempDir(), "absent")], {})),
    ).rejects.toThrow(/cannot read keyring_kek_file/);
    await expect(
      loadConfig(["--keyring-kek-file", "/k"], { CHRONOMAD_KEYRING_KEK: randomBytes(32).toString("base64") }),
    ).rejects.toThrow(new ConfigError("set keyring_kek or keyring_kek_file, not both"));
    await expect(loadConfig(["--oidc-issuer", "not a url"], {})).rejects.toThrow(/oidc_issuer must be a URL/);
  });
});
