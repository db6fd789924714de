/**
 * Where root key material lives. The design, in one place:
 *
 * - The log holds a root key's metadata (`RootKeyCreated`: KeyID, algorithm,
 *   state, create time) and its public signing key, never the material in
 *   clear (design rule 5): the log is meant to be exported.
 * - Every server that has a data dir keeps the material it knows in its
 *   keystore, `<data_dir>/server/keystore/<KeyID>.nks.json` (dir 0700, file
 *   0600), as Nomad does (nomad/encrypter.go saveKeyToStore): the 32-byte
 *   key wrapped with AES-256-GCM under a key-encryption key. Without a
 *   cluster KEK that KEK is random and stored beside it in the same file,
 *   which is what Nomad does too ("security theatre" until a KMS): it keeps
 *   the material out of greps, copies of the log and snapshots, not away
 *   from someone who can read the data dir.
 * - With a cluster KEK (`keyring_kek` / `keyring_kek_file`, 32 bytes base64,
 *   the same on every server), the leader also puts the material in the
 *   `RootKeyCreated` event wrapped under that KEK, and keystore files are
 *   wrapped under it instead of a KEK of their own. Several servers sharing
 *   a Kafka log then all obtain every key from the log, whoever created it.
 *   Without one, only the server that created a key has it: the leader, to
 *   which rotation is forwarded as in Nomad; the others say so in their log
 *   (they do not fetch keys from peers, as Nomad's replicator does).
 * - A server replaying a log whose keys it cannot obtain (an exported log,
 *   no keystore, no KEK) still rebuilds every table: nothing in apply needs
 *   the material. It logs, per key, why it cannot read it; what is encrypted
 *   with that key stays unreadable there.
 * - With the `memory:` log (tests) there is no keystore: the material lives
 *   in the process only, like the log.
 *
 * The public signing key travels in clear in the event, so every server
 * serves the same JWKS whether or not it holds the material.
 */
import { chmod, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { RootKeyMetaSpec, WrappedKeyMaterial } from "../../streams/keyring.ts";
import { type KeyEncryptionKey, kekFromBytes, randomKek, unwrapKey, wrapKey } from "./key-wrap.ts";

/** What a keystore file holds, Nomad's KeyEncryptionKeyWrapper in spirit. */
interface KeystoreFile {
  readonly Meta: Pick<RootKeyMetaSpec, "KeyID" | "Algorithm" | "CreateTime">;
  /** The root key, wrapped. */
  readonly DEK: WrappedKeyMaterial;
  /** base64; only when no cluster KEK wrapped the DEK. */
  readonly KEK?: string;
}

export class KeystoreError extends Error {
  /**
   * `transient`: the file could not be read (I/O), so a later attempt may
   * succeed; otherwise what the file holds is wrong, and stays so.
   */
  constructor(
    message: string,
    readonly transient = false,
  ) {
    super(message);
    this.name = "KeystoreError";
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export class Keystore {
  constructor(
    readonly dir: string,
    private readonly clusterKek?: KeyEncryptionKey,
  ) {}

  /** The keystore of a server with this data dir. */
  static inDataDir(dataDir: string, clusterKek?: KeyEncryptionKey): Keystore {
    return new Keystore(join(dataDir, "server", "keystore"), clusterKek);
  }

  /** Writes the key's file atomically (temp file, rename), readable by this user only. */
  async save(meta: KeystoreFile["Meta"], key: Buffer): Promise<void> {
    const id = checkedId(meta.KeyID);
    const kek = this.clusterKek ?? randomKek();
    const file: KeystoreFile = {
      Meta: { KeyID: id, Algorithm: meta.Algorithm, CreateTime: meta.CreateTime },
      DEK: wrapKey(kek, id, key),
      ...(this.clusterKek ? {} : { KEK: kek.key.toString("base64") }),
    };
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const path = this.pathOf(id);
    const temp = `${path}.tmp`;
    await writeFile(temp, JSON.stringify(file), { mode: 0o600 });
    // The mode given to writeFile is masked by the umask, and ignored for an existing file.
    await chmod(temp, 0o600);
    await rename(temp, path);
  }

  /** The key's material, or undefined when this keystore has no file for it. */
  async load(keyId: string): Promise<Buffer | undefined> {
    const id = checkedId(keyId);
    const path = this.pathOf(id);
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw new KeystoreError(`cannot read keystore file ${path}: ${(err as Error).message}`, true);
    }
    let file: KeystoreFile;
    try {
      file = JSON.parse(text) as KeystoreFile;
    } catch {
      throw new KeystoreError(`keystore file ${path} is not valid JSON`);
    }
    if (file?.Meta?.KeyID !== id || !file.DEK) {
      throw new KeystoreError(`keystore file ${path} does not hold root key ${id}`);
    }
    let kek: KeyEncryptionKey;
    if (file.KEK) kek = kekFromBytes(Buffer.from(file.KEK, "base64"));
    else if (this.clusterKek) kek = this.clusterKek;
    else {
      throw new KeystoreError(
        `keystore file ${path} is wrapped under cluster KEK ${file.DEK.KekID}, and this server has no keyring_kek`,
      );
    }
    try {
      return unwrapKey(kek, id, file.DEK);
    } catch (err) {
      throw new KeystoreError(`keystore file ${path}: ${(err as Error).message}`);
    }
  }

  async remove(keyId: string): Promise<void> {
    await rm(this.pathOf(checkedId(keyId)), { force: true });
  }

  private pathOf(keyId: string): string {
    return join(this.dir, `${keyId}.nks.json`);
  }
}

// The ID becomes a file name: nothing but a UUID may reach the file system.
function checkedId(keyId: string): string {
  if (!UUID.test(keyId)) throw new KeystoreError(`root key ID "${keyId}" is not a UUID`);
  return keyId;
}
