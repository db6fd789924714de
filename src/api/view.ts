import type { FastifyRequest } from "fastify";
import type { Projections } from "../../projections/index.ts";
import { PastIndexError } from "../store/state-at.ts";
import type { Store } from "../store/store.ts";
import { ApiError } from "./api-error.ts";
import { atIndexRefusal, atIndexSupport } from "./at-index-routes.ts";
import type { ApiContext } from "./context.ts";

/** The tables a request reads: the live ones, or those of a past index. */
export interface View {
  readonly tables: Projections["tables"];
  /** Set when the request asked for `?at_index=N`: reads answer as of that index and never block. */
  readonly atIndex?: number;
  /** The store the tables belong to: the live one, or one stopped at `atIndex`. */
  readonly store: Pick<Store, "appliedIndex" | "hash">;
}

/** The response header that says a read was answered from the past. */
export const AT_INDEX_HEADER = "X-Chronomad-At-Index";

/**
 * Resolves `?at_index=N` once per request, before the route runs. Writes
 * cannot be sent to the past; a read route either answers from the past or
 * refuses, as src/api/at-index-routes.ts says, and never ignores it.
 */
export async function resolveView(ctx: ApiContext, request: FastifyRequest): Promise<View> {
  const live: View = { tables: ctx.tables, store: ctx.store };
  const raw = (request.query as Record<string, unknown> | undefined)?.at_index;
  if (raw === undefined || raw === "") return live;
  if (request.method !== "GET" && request.method !== "HEAD") {
    throw ApiError.badRequest("at_index is only for reads (GET)");
  }
  const url = request.routeOptions.url;
  // No route (the 404 answer) or a 405 answer: nothing is read.
  const support = url === undefined ? undefined : atIndexSupport(request.method, url);
  if (url === undefined || support === undefined) return live;
  if (support.kind === "refused") throw ApiError.badRequest(atIndexRefusal(url, support.why));
  const index = typeof raw === "string" && /^[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(index)) {
    throw ApiError.badRequest(`at_index must be a non-negative integer, not "${String(raw)}"`);
  }
  try {
    const past = await ctx.stateAt.at(index);
    return { tables: past.tables, atIndex: past.index, store: past.store };
  } catch (err) {
    if (err instanceof PastIndexError) throw new ApiError(err.status, err.message);
    throw err;
  }
}
