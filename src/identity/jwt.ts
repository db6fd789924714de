import { createPublicKey, type KeyObject, sign, verify } from "node:crypto";
import type { SigningPublicKey } from "../../streams/keyring.ts";
import type { IdentityClaims } from "./claims.ts";

/**
 * Compact JWS (RFC 7515) with EdDSA over Ed25519, built by hand on
 * node:crypto: a workload identity is signed per task at every placement, and
 * this is 2.5 times jose's SignJWT (about 30k against 12k JWTs/s on one core:
 * jose goes through WebCrypto, a promise per token), and its signing input
 * and signature are separate steps, so that a scheduler thread can sign a
 * batch for the event loop (see identity-signer.ts). Only what Nomad's
 * identities use is supported: alg EdDSA, `kid` required.
 */

/** A JWT as presented: three base64url parts. Anything else is not a workload identity. */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** Far above a real identity (~400 bytes): longer secrets are not parsed at all. */
const MAX_JWT_LENGTH = 4096;

const ED25519_SIGNATURE_BYTES = 64;

export function looksLikeJwt(secret: string): boolean {
  return secret.length <= MAX_JWT_LENGTH && COMPACT_JWS.test(secret);
}

// Header and key ID never change together: one encoded header per key.
const headers = new Map<string, string>();

function encodedHeader(keyId: string): string {
  let h = headers.get(keyId);
  if (h === undefined) {
    // golang-jwt marshals its header map with sorted keys: alg, kid, typ.
    h = b64url(JSON.stringify({ alg: "EdDSA", kid: keyId, typ: "JWT" }));
    if (headers.size >= 64) headers.clear();
    headers.set(keyId, h);
  }
  return h;
}

function b64url(text: string): string {
  return Buffer.from(text, "utf8").toString("base64url");
}

/**
 * Signs `claims` with root key `keyId`'s Ed25519 key. Deterministic: the
 * same key and claims give the same JWT (RFC 8032 signatures are), which is
 * what lets the log keep only SigningKeyID.
 */
export function signIdentity(keyId: string, key: KeyObject, claims: IdentityClaims): string {
  const input = signingInput(keyId, claims);
  return jwtOf(input, signJwsInput(key, input));
}

/** The JWS signing input of `claims`: header and payload, encoded. What signJwsInput signs. */
export function signingInput(keyId: string, claims: IdentityClaims): string {
  // Field by field, so the payload's bytes do not depend on how `claims` was built.
  at = 0;
  putAscii('{"nomad_namespace":');
  putString(claims.nomad_namespace);
  putAscii(',"nomad_job_id":');
  putString(claims.nomad_job_id);
  putAscii(',"nomad_allocation_id":');
  putString(claims.nomad_allocation_id);
  putAscii(',"nomad_task":');
  putString(claims.nomad_task);
  putAscii(',"nbf":');
  putNumber(claims.nbf);
  putAscii(',"iat":');
  putNumber(claims.iat);
  putAscii("}");
  return dotted(encodedHeader(keyId), payload.toString("base64url", 0, at));
}

/**
 * Where signingInput writes the payload's JSON, as JSON.stringify of the
 * claims would, then encodes it: one string made for it, where
 * JSON.stringify, a Buffer of its UTF-8 and the base64url text were three
 * (a placement burst makes one per task placed).
 */
let payload = Buffer.allocUnsafeSlow(1024);
let at = 0;

function room(bytes: number): void {
  if (at + bytes <= payload.length) return;
  const larger = Buffer.allocUnsafeSlow(2 * (at + bytes));
  payload.copy(larger, 0, 0, at);
  payload = larger;
}

function putAscii(text: string): void {
  room(text.length);
  at += payload.write(text, at, "latin1");
}

/** Text JSON.stringify writes as it is between quotes: printable ASCII but `"` and `\`. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

function putString(text: string): void {
  if (PLAIN.test(text)) {
    room(text.length + 2);
    payload[at++] = 0x22;
    at += payload.write(text, at, "latin1");
    payload[at++] = 0x22;
    return;
  }
  const json = JSON.stringify(text);
  room(Buffer.byteLength(json));
  at += payload.write(json, at, "utf8");
}

function putNumber(n: number): void {
  putAscii(JSON.stringify(n));
}

/** The signature of a signing input, base64url: any thread may make it. */
export function signJwsInput(key: KeyObject, input: string): string {
  return sign(null, Buffer.from(input), key).toString("base64url");
}

/** The compact JWT of a signing input and its signature. */
export function jwtOf(input: string, signature: string): string {
  return dotted(input, signature);
}

/** Where `dotted` joins two parts; grown for longer ones. */
let joined = Buffer.allocUnsafeSlow(1024);

/**
 * `${a}.${b}` as one flat string. Joined with `+`, a JWT was a tree of
 * ConsStrings over its header, payload and signature strings: kept in the
 * identity cache, a scavenge copied each node, and the first reply's
 * JSON.stringify made a flat copy besides. The parts are base64url, so
 * their bytes are their characters.
 */
function dotted(a: string, b: string): string {
  const length = a.length + 1 + b.length;
  if (length > joined.length) joined = Buffer.allocUnsafeSlow(2 * length);
  joined.write(a, 0, "latin1");
  joined[a.length] = 0x2e; // "."
  joined.write(b, a.length + 1, "latin1");
  return joined.toString("latin1", 0, length);
}

/** The claims of a presented identity: ours always carry nbf and iat, Nomad requires neither. */
export type PresentedClaims = Omit<IdentityClaims, "nbf" | "iat"> & {
  readonly nbf?: number;
  readonly iat?: number;
  readonly exp?: number;
};

/** A JWT split and decoded, its signature not yet checked. */
export interface DecodedJwt {
  readonly keyId: string;
  readonly claims: PresentedClaims;
  readonly signingInput: string;
  readonly signature: Buffer;
}

/** Why a JWT was refused, in the words of Nomad's VerifyClaim (golang-jwt's errors). */
export class IdentityError extends Error {}

const failed = (why: string) => new IdentityError(`failed to verify token: ${why}`);

/** Splits and decodes a compact JWS; throws IdentityError when it is not one of ours. */
export function decodeJwt(token: string): DecodedJwt {
  if (!looksLikeJwt(token)) throw failed("token contains an invalid number of segments");
  const [h, p, s] = token.split(".") as [string, string, string];
  const header = jsonPart(h);
  if (header.alg !== "EdDSA") throw failed(`unexpected signing method: ${String(header.alg)}`);
  // No extension is understood: a header that demands one is refused (RFC 7515 §4.1.11).
  if (header.crit !== undefined || header.b64 !== undefined) throw failed("unsupported critical header");
  const kid = header.kid;
  if (typeof kid !== "string" || kid === "") throw failed("missing key ID header");
  const signature = Buffer.from(s, "base64url");
  if (signature.length !== ED25519_SIGNATURE_BYTES) throw failed("ed25519: verification error");
  return { keyId: kid, claims: presentedClaims(jsonPart(p)), signingInput: `${h}.${p}`, signature };
}

/** The claims Nomad reads, and nothing else the payload may hold. */
function presentedClaims(payload: Record<string, unknown>): PresentedClaims {
  const text = (field: string): string => {
    const v = payload[field];
    if (typeof v !== "string") throw failed("invalid token");
    return v;
  };
  const time = (field: string): { [field: string]: number } => {
    const v = payload[field];
    if (v === undefined) return {};
    if (typeof v !== "number" || !Number.isFinite(v)) throw failed("invalid token");
    return { [field]: v };
  };
  return {
    nomad_namespace: text("nomad_namespace"),
    nomad_job_id: text("nomad_job_id"),
    nomad_allocation_id: text("nomad_allocation_id"),
    nomad_task: text("nomad_task"),
    ...time("nbf"),
    ...time("iat"),
    ...time("exp"),
  };
}

function jsonPart(part: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
  } catch {
    throw failed("token is malformed");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw failed("token is malformed");
  return value as Record<string, unknown>;
}

/** Checks a decoded JWT's signature with `publicKey`; throws IdentityError when it does not match. */
export function checkSignature(jwt: DecodedJwt, publicKey: KeyObject): void {
  if (!verify(null, Buffer.from(jwt.signingInput), publicKey, jwt.signature)) {
    throw failed("ed25519: verification error");
  }
}

/**
 * Clock skew allowed between the server that issued an identity and the one
 * checking it. Nomad allows none (one leader signs and the same cluster
 * checks within its Raft clock); here any server may check, on its own clock.
 */
export const CLOCK_LEEWAY_S = 60;

/** golang-jwt's time checks (exp, iat, nbf), at `nowS` unix seconds. */
export function checkTimes(claims: PresentedClaims, nowS: number): void {
  if (claims.exp !== undefined && nowS >= claims.exp + CLOCK_LEEWAY_S) throw failed("token is expired");
  if (claims.iat !== undefined && claims.iat > nowS + CLOCK_LEEWAY_S)
    throw failed("Token used before issued");
  if (claims.nbf !== undefined && claims.nbf > nowS + CLOCK_LEEWAY_S) throw failed("token is not valid yet");
}

/** The KeyObject of a root key's public signing key. */
export function publicKeyOf(key: SigningPublicKey): KeyObject {
  return createPublicKey({ key: { kty: "OKP", crv: key.Curve, x: key.X }, format: "jwk" });
}
