import { hashSecret, secretMatches } from "../util/secret-hash.ts";

/** A node SecretID as the log and the node_secrets table keep it: its SHA-256 (src/util/secret-hash.ts). */
export const hashNodeSecret = hashSecret;

/** Whether `secret` is the node secret whose hash is stored, compared in constant time. */
export const nodeSecretMatches = secretMatches;
