import type { Actor, Envelope } from "../../streams/event-schema.ts";
import { mapped } from "../util/mapped.ts";
import type { Outcome } from "./projection.ts";
import type { Store } from "./store.ts";

/** An event as a writer builds it: the envelope minus what the writer stamps on it. */
export type Draft<E extends Envelope = Envelope> = Pick<E, "type" | "v" | "data" | "cause">;

/** What the writer stamps on every envelope of one write. */
export type Stamp = Pick<Envelope, "at" | "by">;

/**
 * A record encoded before the write (a plan computed on a scheduler thread):
 * given the writer's stamp, its envelope's bytes, byte for byte what the
 * codec would give for the same draft. It spares the main thread decoding
 * and encoding a plan it only appends.
 */
export interface EncodedDraft {
  readonly type: string;
  /** Allocations the record changes: what applying it costs, roughly (the plan queue's budget). */
  readonly allocs: number;
  encode(stamp: Stamp): Uint8Array;
}

/** What a write takes: drafts, or records encoded already. */
export type Writable = Draft | EncodedDraft;

export function isEncoded(w: Writable): w is EncodedDraft {
  return "encode" in w;
}

export interface Written {
  /** The index of the last record written. */
  readonly index: number;
  /** One outcome per draft, in order. */
  readonly outcomes: readonly Outcome[];
}

/**
 * Stamps drafts with the time and the actor, appends them as one run and
 * waits until they are applied. The one way API handlers and services write.
 */
export async function writeEvents(
  store: Store,
  now: number,
  actor: Actor,
  drafts: readonly Writable[],
): Promise<Written> {
  const stamp: Stamp = { at: now, by: actor };
  // `mapped`, not `drafts.map`: one array map for Store.append in every tier.
  // Built field by field: a literal that adds keys after a spread takes a
  // slow path in V8 (the codec writes the fields in its own order anyway).
  const envelopes = mapped<Writable, Envelope | Uint8Array>(drafts, (d) =>
    isEncoded(d)
      ? d.encode(stamp)
      : { type: d.type, v: d.v, at: now, by: actor, cause: d.cause, data: d.data },
  );
  const { first, last } = await store.append(envelopes);
  const outcomes: Outcome[] = [];
  for (let i = first; i <= last; i++) outcomes.push(await store.waitFor(i));
  return { index: last, outcomes };
}
