import type { Socket } from "node:net";
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
  const wait = new BlockingWait(ctx, request, watches);
  try {
    // Armed before each run, so a change applied while the read runs (it may
    // yield) or before the wait begins still wakes it.
    wait.arm();
    let result = await run();
    if (result.index <= minIndex) {
      const deadline = Date.now() + waitMs + Math.random() * (waitMs / JITTER_FRACTION);
      wait.until(deadline);
      while (result.index <= minIndex && !callerGone(request)) {
        if (deadline - Date.now() <= 0) break;
        if ((await wait.next()) !== "changed") break;
        wait.arm();
        result = await run();
      }
    }
    return result;
  } finally {
    wait.end();
  }
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

type WaitOutcome = "changed" | "timeout" | "gone" | "closing";

/**
 * One long poll's wait, from its first run to its answer: one object and
 * its callbacks for the whole wait, whatever the number of wakes. What ends
 * the wait (its deadline, the caller going away, the server closing) is
 * listened for once, not armed again per wake: a wake then costs the watch
 * registration and the one promise the loop awaits.
 */
class BlockingWait {
  /** Whether the watches changed since they were last armed. */
  private changed = false;
  /** What ended the wait, for good. */
  private ended: Exclude<WaitOutcome, "changed"> | undefined;
  private cancelWatch: (() => void) | undefined;
  /** The loop waiting in next(), if it is. */
  private waiter: ((why: WaitOutcome) => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closing: Subscription | undefined;
  private readonly socket: Socket | undefined;
  // Made once per wait (not per wake), and handed to the watches, the socket and closing$.
  private readonly onChange = () => {
    // A watch fires once, and cancels itself.
    this.cancelWatch = undefined;
    this.changed = true;
    this.settle();
  };
  private readonly onGone = () => this.finish("gone");
  private readonly onClosing = () => this.finish("closing");

  constructor(
    private readonly ctx: ApiContext,
    request: FastifyRequest,
    private readonly watches: readonly Watch[],
  ) {
    this.socket = request.raw.socket ?? undefined;
  }

  /** Watches for the next applied change of the watches (the previous one done with). */
  arm(): void {
    this.cancelWatch?.();
    this.changed = false;
    this.cancelWatch = this.ctx.watches.once(this.watches, this.onChange);
  }

  /** From here on the wait ends at `deadline`, when the caller goes away, or when the server closes. */
  until(deadline: number): void {
    this.timer = setTimeout(timedOut, Math.max(0, deadline - Date.now()), this);
    this.socket?.once("close", this.onGone);
    // closing$ has completed already once the server is closing: ends the wait at once.
    this.closing = this.ctx.closing$.subscribe({ next: this.onClosing, complete: this.onClosing });
  }

  /** The change armed for, or what ended the wait (that first, when both happened). */
  next(): Promise<WaitOutcome> {
    if (this.ended !== undefined) return Promise.resolve(this.ended);
    if (this.changed) return Promise.resolve("changed");
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  end(): void {
    this.cancelWatch?.();
    this.cancelWatch = undefined;
    this.waiter = undefined;
    // Answered by its first run: it never waited.
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.closing?.unsubscribe();
    this.socket?.off("close", this.onGone);
  }

  finish(why: Exclude<WaitOutcome, "changed">): void {
    this.ended ??= why;
    this.settle();
  }

  private settle(): void {
    const waiter = this.waiter;
    if (waiter === undefined) return;
    this.waiter = undefined;
    waiter(this.ended ?? "changed");
  }
}

function timedOut(wait: BlockingWait): void {
  wait.finish("timeout");
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
