import type { Envelope } from "../../streams/event-schema.ts";
import type { AuthenticatedIdentity } from "../auth/authenticate.ts";
import { ApiError } from "./api-error.ts";
import type { ApiContext } from "./context.ts";

/** An event as a handler builds it: the envelope minus what commit stamps on it. */
export type Draft<E extends Envelope = Envelope> = Pick<E, "type" | "v" | "data">;

/**
 * The write path of every handler: stamp the events with the time and the
 * caller, append them as one run, wait until they are applied, and turn a
 * rejection at apply (the second validation) into the matching API error.
 * Resolves with the index of the last event.
 */
export async function commit(
  ctx: ApiContext,
  identity: AuthenticatedIdentity,
  drafts: readonly Draft[],
): Promise<number> {
  const at = ctx.now();
  const started = performance.now();
  const { first, last } = await ctx.store.append(drafts.map((d) => ({ ...d, at, by: identity.actor })));
  ctx.metrics.sample("chronomad.log.append_ms", performance.now() - started);
  for (let i = first; i <= last; i++) {
    const outcome = await ctx.store.waitFor(i);
    if (outcome.status === "rejected") throw new ApiError(outcome.code, outcome.reason);
  }
  return last;
}
