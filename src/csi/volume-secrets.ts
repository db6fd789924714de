import type { CSISealedSecrets } from "../../streams/csi.ts";
import { ApiError } from "../api/api-error.ts";
import type { ApiContext } from "../api/context.ts";
import type { Keyring } from "../keyring/keyring.ts";
import {
  decryptItems,
  encryptWithActiveKey,
  VariableDecryptError,
  VariableKeyUnavailable,
} from "../variables/variable-crypto.ts";

/**
 * A volume's Secrets sealed as a variable's items are (AES-256-GCM under the
 * active root key, the key ID as additional data), so the log, the event
 * stream and history only ever hold ciphertext; null when there are none.
 * No root key yet, or one this server lacks, is a 500 with why (nothing is
 * written in clear in its place).
 */
export function sealVolumeSecrets(
  ctx: Pick<ApiContext, "keyring" | "tables">,
  secrets: Readonly<Record<string, string>> | null,
): CSISealedSecrets | null {
  if (!secrets || Object.keys(secrets).length === 0) return null;
  try {
    return encryptWithActiveKey(ctx.keyring, ctx.tables.rootKeys, secrets);
  } catch (err) {
    if (err instanceof VariableKeyUnavailable) throw new ApiError(500, `volume secrets: ${err.message}`);
    throw err;
  }
}

/**
 * The Secrets of a volume in clear, for the calls that hand them to a
 * plugin (never for an API answer). Throws VariableKeyUnavailable or
 * VariableDecryptError rather than return anything that did not open.
 */
export function openVolumeSecrets(keyring: Keyring, sealed: CSISealedSecrets | null): Record<string, string> {
  if (!sealed) return {};
  return decryptItems(keyring, sealed);
}

export { VariableDecryptError, VariableKeyUnavailable };
