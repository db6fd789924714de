import type { KeyObject } from "node:crypto";
import { inSlices } from "../query/sliced-walk.ts";
import type { IdentityClaims } from "./claims.ts";
import { jwtOf, signIdentity, signingInput, signJwsInput } from "./jwt.ts";

/**
 * Signs a batch of JWS signing inputs with one key elsewhere (a scheduler
 * thread): resolves with their base64url signatures, in order.
 */
export type SignElsewhere = (key: KeyObject, inputs: readonly string[]) => Promise<readonly string[]>;

interface Batch {
  readonly key: KeyObject;
  readonly inputs: string[];
  readonly waiting: { resolve: (jwt: string) => void; reject: (err: Error) => void }[];
}

/**
 * Where the workload identities of a server are signed. On the event loop
 * an Ed25519 signature costs ~38 µs, and a placement burst at 5,000 nodes
 * signs tens of thousands: 4 of every 60 seconds the loop had for
 * heartbeats and client RPCs. Given somewhere else to sign (the scheduler
 * threads), the signatures asked for in one turn of the loop go there as one
 * batch, and the loop only builds their inputs. One job per signature on
 * libuv's pool was tried first: each completion wakes the loop, which cost
 * 16–45 µs a signature on this 2-core machine, more than signing in place.
 */
export class IdentitySigner {
  private elsewhere: SignElsewhere | undefined;
  private batches = new Map<KeyObject, Batch>();

  /** Signs from now on with `elsewhere`, or on the event loop again (undefined). */
  signElsewhere(elsewhere: SignElsewhere | undefined): void {
    this.elsewhere = elsewhere;
  }

  /** The JWT at once when signed here; its promise when it is signed elsewhere. */
  sign(keyId: string, key: KeyObject, claims: IdentityClaims): string | Promise<string> {
    if (!this.elsewhere) return signIdentity(keyId, key, claims);
    const input = signingInput(keyId, claims);
    let batch = this.batches.get(key);
    if (!batch) {
      batch = { key, inputs: [], waiting: [] };
      this.batches.set(key, batch);
      if (this.batches.size === 1) setImmediate(() => this.send());
    }
    batch.inputs.push(input);
    return new Promise((resolve, reject) => batch.waiting.push({ resolve, reject }));
  }

  private send(): void {
    const batches = [...this.batches.values()];
    this.batches.clear();
    for (const { key, inputs, waiting } of batches) {
      for (let i = 0; i < inputs.length; i += SIGNATURES_PER_MESSAGE) {
        const end = i + SIGNATURES_PER_MESSAGE;
        this.signPart(key, inputs.slice(i, end), waiting.slice(i, end));
      }
    }
  }

  private signPart(key: KeyObject, inputs: readonly string[], waiting: Batch["waiting"]): void {
    const elsewhere = this.elsewhere;
    // A thread lost (or none ready) signs nothing: the loop signs them itself then.
    (elsewhere ? elsewhere(key, inputs) : Promise.reject(new Error("no signer")))
      .catch(() => signInSlices(key, inputs))
      .then((signatures) => {
        for (const [i, w] of waiting.entries()) w.resolve(jwtOf(inputs[i]!, signatures[i]!));
      })
      .catch((err: Error) => {
        for (const w of waiting) w.reject(err);
      });
  }
}

/**
 * About 2.5 ms of a thread's time. Every caller waiting for a part resumes
 * in the one turn of the loop that takes it back: with 512 a part, the
 * Alloc.GetAllocs answers of a whole plan were built back to back, and the
 * loop's delay p99 during a burst went from about 50 ms to 600–1,200 ms.
 */
const SIGNATURES_PER_MESSAGE = 64;

async function signInSlices(key: KeyObject, inputs: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  await inSlices(inputs, (input) => out.push(signJwsInput(key, input)));
  return out;
}
