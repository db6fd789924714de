import type { FastifyRequest } from "fastify";
import type { Projections } from "../../projections/index.ts";
import { PastIndexError } from "../store/state-at.ts";
import { ApiError } from "./api-error.ts";
import type { ApiContext } from "./context.ts";

/** The tables a request reads: the live ones, or those of a past index. */
export interface View {
  readonly tables: Projections["tables"];
  /** Set when the request asked for `?at_index=N`: reads answer as of that index and never block. */
  readonly atIndex?: number;
}

/** The response header that says a read was answered from the past. */
export const AT_INDEX_HEADER = "X-Chronomad-At-Index";

/**
 * Resolves `?at_index=N` once per request, before the route runs. Writes
 * cannot be sent to the past.
 */
export async function resolveView(ctx: ApiContext, request: FastifyRequest): Promise<View> {
  const raw = (request.query as Record<string, unknown> | undefined)?.at_index;
  if (raw === undefined || raw === "") return { tables: ctx.tables };
  if (request.method !== "GET") throw ApiError.badRequest("at_index is only for reads (GET)");
  const index = Number(raw);
  if (!Number.isSafeInteger(index) || index < 0) {
    throw ApiError.badRequest(`at_index must be a non-negative integer, not "${String(raw)}"`);
  }
  try {
    const past = await ctx.stateAt.at(index);
    return { tables: past.tables, atIndex: past.index };
  } catch (err) {
    if (err instanceof PastIndexError) throw new ApiError(err.status, err.message);
    throw err;
  }
}
