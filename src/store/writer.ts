import type { Actor, Envelope } from "../../streams/event-schema.ts";
import type { Outcome } from "./projection.ts";
import type { Store } from "./store.ts";

/** An event as a writer builds it: the envelope minus what the writer stamps on it. */
export type Draft<E extends Envelope = Envelope> = Pick<E, "type" | "v" | "data" | "cause">;

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
  drafts: readonly Draft[],
): Promise<Written> {
  const { first, last } = await store.append(drafts.map((d) => ({ ...d, at: now, by: actor })));
  const outcomes: Outcome[] = [];
  for (let i = first; i <= last; i++) outcomes.push(await store.waitFor(i));
  return { index: last, outcomes };
}
