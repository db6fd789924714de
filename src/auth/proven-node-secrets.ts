import type { NodeSecretRow } from "../../projections/nodes.ts";
import { hashNodeSecret, nodeSecretMatches } from "../nodes/node-secret.ts";
import type { Table } from "../store/table.ts";
import { constantTimeEqual } from "./constant-time.ts";

/** A node secret that was proven against the stored hash, in the process's memory only (never a table or the log). */
interface Proven {
  /** The stored hash it was proven against: a row with another one is another secret. */
  readonly hash: string;
  readonly secret: string;
}

/**
 * Node secrets once proven, so that the next call of the same node with
 * the same secret is checked by one constant-time compare instead of a
 * SHA-256 (every heartbeat, every allocation pull: at 5,000 nodes a few
 * percent of the server's main thread). The ACL authenticator and the
 * client RPC routes' node checks share them, so a call is hashed at most
 * once, and a node that called before not at all.
 *
 * Safe because a remembered secret stands for one stored row and nothing
 * else: the table's rows are replaced, never changed, when a node registers
 * with another secret, and the proof is kept with the hash it was proven
 * against, so a secret that was right before the change (or a node removed
 * since) is checked by hashing again, and fails. A wrong secret is compared
 * with the remembered one in constant time (node secrets are UUIDs: their
 * length says nothing), or hashed.
 */
const provenByRow = new WeakMap<NodeSecretRow, Proven>();

/** Whether `secret` is the secret whose hash `row` stores. */
export function nodeSecretProven(secret: string, row: NodeSecretRow): boolean {
  const proven = provenByRow.get(row);
  if (proven !== undefined && proven.hash === row.SecretIDHash)
    return constantTimeEqual(proven.secret, secret);
  if (!nodeSecretMatches(secret, row.SecretIDHash)) return false;
  provenByRow.set(row, { hash: row.SecretIDHash, secret });
  return true;
}

/**
 * Calls that name no node (Alloc.GetAllocs, and the ACL authenticator for
 * every call) find the node by its secret: the row a secret was last proven
 * for, looked up by the secret itself (a Map lookup hashes the whole key,
 * so it says nothing of how close a wrong secret is). Bounded: cleared when
 * it outgrows any cluster's nodes (entries of nodes that changed secrets
 * are dropped when next looked up, or never looked up again).
 */
const rowBySecret = new Map<string, NodeSecretRow>();
const MAX_REMEMBERED = 100_000;

/** The row of the node whose secret `secret` is, or undefined: still the table's row, and the secret proven against it. */
export function nodeSecretRowOf(secrets: Table<NodeSecretRow>, secret: string): NodeSecretRow | undefined {
  return (
    rememberedNodeSecretRow(secrets, secret) ?? nodeSecretRowByHash(secrets, secret, hashNodeSecret(secret))
  );
}

/**
 * The row `secret` was proven for before, if it is still the table's row
 * and the secret still proves it, without hashing anything; undefined when
 * that is not known (the caller then hashes, see nodeSecretRowByHash).
 */
export function rememberedNodeSecretRow(
  secrets: Table<NodeSecretRow>,
  secret: string,
): NodeSecretRow | undefined {
  const remembered = rowBySecret.get(secret);
  if (remembered === undefined) return undefined;
  if (secrets.get(remembered.ID) === remembered && nodeSecretProven(secret, remembered)) return remembered;
  // The node registered again with another secret, or was removed.
  rowBySecret.delete(secret);
  return undefined;
}

/**
 * The row filed under `hash`, the SHA-256 of `secret` (hashNodeSecret),
 * when there is one: the row found by it holds that very hash (compared
 * again in constant time all the same). Remembered, so the secret's next
 * call is not hashed.
 */
export function nodeSecretRowByHash(
  secrets: Table<NodeSecretRow>,
  secret: string,
  hash: string,
): NodeSecretRow | undefined {
  const [row] = secrets.by("hash", hash);
  if (!row || !constantTimeEqual(hash, row.SecretIDHash)) return undefined;
  provenByRow.set(row, { hash: row.SecretIDHash, secret });
  if (rowBySecret.size >= MAX_REMEMBERED) rowBySecret.clear();
  rowBySecret.set(secret, row);
  return row;
}
