import { timingSafeEqual } from "node:crypto";
import type { NodeSecretRow } from "../../../projections/nodes.ts";
import { hashNodeSecret, nodeSecretMatches } from "../../nodes/node-secret.ts";
import type { Table } from "../../store/table.ts";

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
 * percent of the server's main thread).
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
  if (proven !== undefined && proven.hash === row.SecretIDHash) return sameSecret(proven.secret, secret);
  if (!nodeSecretMatches(secret, row.SecretIDHash)) return false;
  provenByRow.set(row, { hash: row.SecretIDHash, secret });
  return true;
}

/**
 * Calls that name no node (Alloc.GetAllocs) find the node by its secret:
 * the row a secret was last proven for, looked up by the secret itself
 * (a Map lookup hashes the whole key, so it says nothing of how close a
 * wrong secret is). Bounded: cleared when it outgrows any cluster's nodes
 * (entries of nodes that changed secrets are never looked up again).
 */
const rowBySecret = new Map<string, NodeSecretRow>();
const MAX_REMEMBERED = 100_000;

/** The row of the node whose secret `secret` is, or undefined: still the table's row, and the secret proven against it. */
export function nodeSecretRowOf(secrets: Table<NodeSecretRow>, secret: string): NodeSecretRow | undefined {
  const remembered = rowBySecret.get(secret);
  if (remembered !== undefined && secrets.get(remembered.ID) === remembered) {
    return nodeSecretProven(secret, remembered) ? remembered : undefined;
  }
  // One hash: the row found by it holds that very hash (compared again in
  // constant time all the same).
  const presented = hashNodeSecret(secret);
  const [row] = secrets.by("hash", presented);
  if (!row || !sameHash(presented, row.SecretIDHash)) return undefined;
  provenByRow.set(row, { hash: row.SecretIDHash, secret });
  if (rowBySecret.size >= MAX_REMEMBERED) rowBySecret.clear();
  rowBySecret.set(secret, row);
  return row;
}

/**
 * Constant-time string equality: every character is compared whatever the
 * first difference (no early exit, no branch on the characters), without
 * the two buffers timingSafeEqual would need per call.
 */
function sameSecret(known: string, presented: string): boolean {
  if (known.length !== presented.length) return false;
  let diff = 0;
  for (let i = 0; i < known.length; i++) diff |= known.charCodeAt(i) ^ presented.charCodeAt(i);
  return diff === 0;
}

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && timingSafeEqual(x, y);
}
