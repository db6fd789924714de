import { readFile } from "node:fs/promises";
import { ConfigError, type ServerConfig } from "../config.ts";
import { type KeyEncryptionKey, parseKek } from "./key-wrap.ts";

/**
 * The cluster KEK the operator gave this server (keyring_kek or
 * keyring_kek_file), or undefined. A malformed one is a ConfigError naming
 * the setting, never the value.
 */
export async function loadClusterKek(config: ServerConfig): Promise<KeyEncryptionKey | undefined> {
  try {
    if (config.keyringKek) return parseKek(config.keyringKek, "keyring_kek (CHRONOMAD_KEYRING_KEK)");
    if (!config.keyringKekFile) return undefined;
    let text: string;
    try {
      text = await readFile(config.keyringKekFile, "utf8");
    } catch (err) {
      throw new Error(`cannot read keyring_kek_file ${config.keyringKekFile}: ${(err as Error).message}`);
    }
    return parseKek(text, `keyring_kek_file ${config.keyringKekFile}`);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}
