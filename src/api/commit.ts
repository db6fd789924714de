import type { AuthenticatedIdentity } from "../auth/authenticate.ts";
import { type Draft, writeEvents } from "../store/writer.ts";
import { ApiError } from "./api-error.ts";
import type { ApiContext } from "./context.ts";

export type { Draft } from "../store/writer.ts";

/**
 * The write path of every handler: append the events as the caller, wait
 * until they are applied, and turn a rejection at apply (the second
 * validation) into the matching API error. Resolves with the index of the
 * last event.
 */
export async function commit(
  ctx: ApiContext,
  identity: AuthenticatedIdentity,
  drafts: readonly Draft[],
): Promise<number> {
  const started = performance.now();
  const { index, outcomes } = await writeEvents(ctx.store, ctx.clock.now(), identity.actor, drafts);
  ctx.metrics.sample("chronomad.write_ms", performance.now() - started);
  for (const outcome of outcomes) {
    if (outcome.status === "rejected") throw new ApiError(outcome.code, outcome.reason);
  }
  return index;
}
