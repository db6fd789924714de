import type { KeyObject } from "node:crypto";
import { inSlices } from "../query/sliced-walk.ts";
import type { IdentityClaims } from "./claims.ts";
import { jwtOf, signIdentity, signingInput, signJwsInput } from "./jwt.ts";

/**
 * Signs a batch of JWS signing inputs with one key elsewhere (a scheduler
 * thread): resolves with their base64url signatures, in order.
 */
export type SignElsewhere = (key: KeyObject, inputs: readonly string[]) => Promise<readonly string[]>;

/** Up to SIGNATURES_PER_MESSAGE signing inputs of one key, sent elsewhere as one message. */
interface Part {
  readonly key: KeyObject;
  readonly inputs: string[];
  /** Their signatures, in order, once the part is signed. */
  readonly signed: Promise<readonly string[]>;
  settle(signatures: Promise<readonly string[]>): void;
}

function newPart(key: KeyObject): Part {
  let settle!: (signatures: Promise<readonly string[]>) => void;
  const signed = new Promise<readonly string[]>((resolve) => {
    settle = resolve;
  });
  return { key, inputs: [], signed, settle };
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
  /** Parts filled in this turn of the loop, the last of each key still taking inputs. */
  private parts: Part[] = [];
  private filling = new Map<KeyObject, Part>();

  /** Signs from now on with `elsewhere`, or on the event loop again (undefined). */
  signElsewhere(elsewhere: SignElsewhere | undefined): void {
    this.elsewhere = elsewhere;
  }

  /**
   * The JWT at once when signed here; its promise when it is signed
   * elsewhere: one `then` on its part's signatures (no resolving functions
   * of its own), so a JWT waiting for its signature holds little.
   */
  sign(keyId: string, key: KeyObject, claims: IdentityClaims): string | Promise<string> {
    if (!this.elsewhere) return signIdentity(keyId, key, claims);
    const input = signingInput(keyId, claims);
    let part = this.filling.get(key);
    if (part === undefined || part.inputs.length === SIGNATURES_PER_MESSAGE) {
      part = newPart(key);
      this.filling.set(key, part);
      if (this.parts.push(part) === 1) setImmediate(() => this.send());
    }
    const at = part.inputs.push(input) - 1;
    return part.signed.then((signatures) => jwtOf(input, signatures[at]!));
  }

  private send(): void {
    const parts = this.parts;
    this.parts = [];
    this.filling.clear();
    for (const part of parts) this.signPart(part);
  }

  private signPart(part: Part): void {
    const { key, inputs } = part;
    const elsewhere = this.elsewhere;
    // A thread lost (or none ready) signs nothing: the loop signs them itself then.
    part.settle(
      (elsewhere ? elsewhere(key, inputs) : Promise.reject(new Error("no signer"))).catch(() =>
        signInSlices(key, inputs),
      ),
    );
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
