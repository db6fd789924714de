import type { FastifyReply, FastifyRequest } from "fastify";
import type { Subscription } from "rxjs";
import { staleParam } from "../query/query-bool.ts";
import type { Watch } from "../store/watches.ts";
import { parseDuration } from "../util/duration.ts";
import { ApiError } from "./api-error.ts";
import type { ApiContext } from "./context.ts";

/** What a read returns: the index that describes it, and the body. */
export interface ReadResult<T> {
  readonly index: number;
  readonly body: T;
  readonly nextToken?: string;
}

/** Nomad's ceiling and default for `?wait=` (MaxBlockingRPCQueryTime). */
export const MAX_WAIT_MS = 300_000;
/** Nomad adds up to wait/16 of random stagger so a herd of watchers spreads out. */
const JITTER_FRACTION = 16;

export interface BlockingParams {
  readonly minIndex: number;
  readonly waitMs: number;
}

export function parseBlockingParams(query: Record<string, unknown>): BlockingParams {
  const rawIndex = query.index;
  let minIndex = 0;
  if (rawIndex !== undefined && rawIndex !== "") {
    minIndex = Number(rawIndex);
    if (!Number.isSafeInteger(minIndex) || minIndex < 0) throw ApiError.badRequest("Invalid index");
  }
  let waitMs = MAX_WAIT_MS;
  if (query.wait !== undefined && query.wait !== "") {
    const ms = parseDuration(String(query.wait));
    if (ms === undefined) throw ApiError.badRequest("Invalid wait time");
    if (ms > 0) waitMs = Math.min(ms, MAX_WAIT_MS);
  }
  return { minIndex, waitMs };
}

/**
 * Runs a read as a Nomad blocking query: with `?index=N`, the answer waits
 * until the read's index passes N (or `?wait` runs out) — woken by the
 * store's applied batches that change what it `watches` (tables, or finer),
 * never by polling. Sets the X-Nomad-* headers and returns the body.
 */
export async function blockingQuery<T>(
  ctx: ApiContext,
  request: FastifyRequest,
  reply: FastifyReply,
  watches: readonly Watch[],
  run: () => ReadResult<T> | Promise<ReadResult<T>>,
): Promise<T> {
  const query = request.query as Record<string, unknown>;
  // chronomad's reads are always consistent; `stale` is only checked, as Nomad checks it.
  staleParam(query);
  const params = parseBlockingParams(query);
  const result = await runBlocking(ctx, request, params, watches, run);
  setReadHeaders(ctx, reply, result.index);
  if (result.nextToken) reply.header("X-Nomad-NextToken", result.nextToken);
  return result.body;
}

/**
 * The blocking loop itself, for reads whose parameters do not come from the
 * query string (client RPCs carry MinQueryIndex and MaxQueryTime in their
 * body): re-runs `run` whenever an applied batch changes what it `watches`,
 * until its index passes `minIndex` or the wait runs out.
 */
export async function runBlocking<T>(
  ctx: ApiContext,
  request: FastifyRequest,
  { minIndex, waitMs }: BlockingParams,
  watches: readonly Watch[],
  run: () => ReadResult<T> | Promise<ReadResult<T>>,
): Promise<ReadResult<T>> {
  // The past does not change: a read at an index answers at once, as does
  // one with no index to wait past. Those need no watch.
  const past = request.view?.atIndex !== undefined;
  if (minIndex <= 0 || past) return run();
  // Armed before each run, so a change applied while the read runs (it may
  // yield) or before the wait begins still wakes it.
  let change = armChange(ctx, watches);
  try {
    let result = await run();
    if (result.index <= minIndex) {
      const deadline = Date.now() + waitMs + Math.random() * (waitMs / JITTER_FRACTION);
      while (result.index <= minIndex && !callerGone(request)) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) break;
        if ((await nextChange(ctx, request, change.changed, remaining)) !== "changed") break;
        change = armChange(ctx, watches);
        result = await run();
      }
    }
    return result;
  } finally {
    change.cancel();
  }
}

interface ArmedChange {
  /** Resolves at the first applied change to the watches after arming. */
  readonly changed: Promise<void>;
  cancel(): void;
}

function armChange(ctx: ApiContext, watches: readonly Watch[]): ArmedChange {
  let cancel = () => {};
  const changed = new Promise<void>((resolve) => {
    cancel = ctx.watches.once(watches, () => resolve());
  });
  return { changed, cancel };
}

/**
 * Whether the caller went away. Its connection tells, not the request stream:
 * Node destroys an IncomingMessage as soon as its body has been read (a GET's
 * too), so `request.raw.destroyed` turns true while the caller still waits,
 * and a read that yields before it blocks would answer at once, stale.
 */
function callerGone(request: FastifyRequest): boolean {
  return request.raw.socket?.destroyed === true;
}

/** Waits for `changed`, the end of `ms`, the caller going away, or the server closing. */
function nextChange(
  ctx: ApiContext,
  request: FastifyRequest,
  changed: Promise<void>,
  ms: number,
): Promise<"changed" | "timeout" | "gone" | "closing"> {
  return new Promise((resolve) => {
    let settled = false;
    let closing: Subscription | undefined;
    const socket = request.raw.socket;
    const gone = () => settle("gone");
    const settle = (why: "changed" | "timeout" | "gone" | "closing") => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      closing?.unsubscribe();
      socket?.off("close", gone);
      resolve(why);
    };
    void changed.then(() => settle("changed"));
    const timer = setTimeout(() => settle("timeout"), ms);
    socket?.once("close", gone);
    // closing$ has completed already once the server is closing: settles at once.
    closing = ctx.closing$.subscribe({ next: () => settle("closing"), complete: () => settle("closing") });
    if (settled) closing.unsubscribe();
  });
}

/**
 * The headers of Nomad's setMeta. The index is the read's own: 0 for a table
 * never written, as Nomad answers; the few reads Nomad floors at 1 (node
 * allocations, namespaces, the client's allocations) floor it themselves.
 */
export function setReadHeaders(ctx: ApiContext, reply: FastifyReply, index: number): void {
  reply.header("X-Nomad-Index", String(index));
  reply.header("X-Nomad-KnownLeader", String(ctx.leadership.leaderAddress() !== ""));
  reply.header("X-Nomad-LastContact", String(Math.round(ctx.leadership.lastContactMs())));
}
