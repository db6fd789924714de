import type { Socket } from "node:net";
import type { FastifyReply, FastifyRequest } from "fastify";
import { staleParam } from "../query/query-bool.ts";
import { type Watch, Watcher } from "../store/watches.ts";
import { parseDuration } from "../util/duration.ts";
import { ApiError } from "./api-error.ts";
import type { ApiContext } from "./context.ts";
import { type OpenWait, OpenWaits } from "./open-waits.ts";

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
  return new BlockingWait(ctx, request, minIndex, waitMs, watches, run).start();
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

/**
 * One long poll, from its first run to its answer: one object and its
 * callbacks for the whole wait, whatever the number of wakes. What ends the
 * wait (its deadline, the caller going away, the server closing) is
 * listened for once, not armed again per wake; it is its own Watcher, armed
 * again before each run (no registration, closure or promise of its own per
 * wake), and a wake runs the read (a read that yields: one `then`).
 */
class BlockingWait<T> extends Watcher implements OpenWait {
  openPrev: OpenWait | undefined = undefined;
  openNext: OpenWait | undefined = undefined;
  /** The watches changed since they were last armed. */
  private changed = false;
  /** Waiting for a change: the last run's result did not pass minIndex. */
  private waiting = false;
  private done = false;
  /** What ended the wait, for good: the last result is the answer. */
  private ended: "timeout" | "gone" | "closing" | undefined;
  private last: ReadResult<T> | undefined;
  private deadline = 0;
  private timer: NodeJS.Timeout | undefined;
  private open: OpenWaits | undefined;
  private readonly socket: Socket | undefined;
  private resolve: (result: ReadResult<T>) => void = noop;
  private reject: (err: unknown) => void = noop;
  // Made once per wait (not per wake), and handed to the microtask queue,
  // the read's promise, the socket and closing$.
  private readonly step = () => {
    if (this.done) return;
    // Armed before each run, so a change applied while the read runs (it may
    // yield) or before the wait begins still wakes it.
    this.arm();
    let result: ReadResult<T> | Promise<ReadResult<T>>;
    try {
      result = this.run();
    } catch (err) {
      this.fail(err);
      return;
    }
    if (isPromise(result)) result.then(this.onResult, this.onError);
    else this.onResult(result);
  };
  private readonly onResult = (result: ReadResult<T>) => {
    if (this.done) return;
    this.last = result;
    if (result.index > this.minIndex || callerGone(this.request)) return this.answer(result);
    if (this.timer === undefined) this.until();
    if (this.deadline - Date.now() <= 0 || this.ended !== undefined) return this.answer(result);
    if (this.changed) return this.step();
    this.waiting = true;
  };
  private readonly onError = (err: unknown) => this.fail(err);
  private readonly onGone = () => this.finish("gone");

  constructor(
    private readonly ctx: ApiContext,
    private readonly request: FastifyRequest,
    private readonly minIndex: number,
    private readonly waitMs: number,
    watches: readonly Watch[],
    private readonly run: () => ReadResult<T> | Promise<ReadResult<T>>,
  ) {
    super(watches);
    this.socket = request.raw.socket ?? undefined;
  }

  /** Watches' call, once per arming: something watched changed, in a batch applied whole. */
  wake(): void {
    this.changed = true;
    if (!this.waiting) return;
    this.waiting = false;
    // Run after the wake, as the batch's other subscribers have: not inside
    // them (queueMicrotask would wrap the callback in an AsyncResource).
    void resolved.then(this.step);
  }

  start(): Promise<ReadResult<T>> {
    return new Promise<ReadResult<T>>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      this.step();
    });
  }

  /** Ends the wait (its deadline, see timedOut; the caller gone; the server closing): answers the last result. */
  finish(why: "timeout" | "gone" | "closing"): void {
    this.ended ??= why;
    if (!this.waiting) return;
    this.waiting = false;
    this.answer(this.last!);
  }

  private arm(): void {
    this.changed = false;
    this.ctx.watches.arm(this);
  }

  /** From the first run that did not pass minIndex: the deadline, the caller going away, the server closing. */
  private until(): void {
    const ms = waitWithJitter(this.waitMs);
    this.deadline = Date.now() + ms;
    this.timer = setTimeout(timedOut, ms, this);
    // Not `once`: its wrapper is a closure and an object per wait; end() removes it.
    this.socket?.on("close", this.onGone);
    this.open = openWaitsOf(this.ctx);
    // The server is closing already: the wait ends at once.
    if (!this.open.add(this)) this.ended ??= "closing";
  }

  private answer(result: ReadResult<T>): void {
    this.end();
    this.resolve(result);
  }

  private fail(err: unknown): void {
    this.end();
    this.reject(err);
  }

  private end(): void {
    this.done = true;
    this.waiting = false;
    this.ctx.watches.disarm(this);
    // Answered by its first run: it never waited.
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.open?.remove(this);
    this.socket?.off("close", this.onGone);
  }
}

function noop(): void {}

const resolved = Promise.resolve();

/**
 * The wait and Nomad's random stagger of up to wait/16, in whole seconds
 * for waits of 16 s or more: Node keeps a list of timers per duration, and
 * a duration of its own per long poll (5,000 nodes' polls) cost a list and
 * a priority-queue insertion each; a few dozen durations share them.
 */
export function waitWithJitter(waitMs: number): number {
  const jitter = Math.random() * (waitMs / JITTER_FRACTION);
  return waitMs + (waitMs >= 16_000 ? Math.floor(jitter / 1000) * 1000 : jitter);
}

/** Per server (its API context): the waits its closing ends. */
const openWaits = new WeakMap<ApiContext, OpenWaits>();

function openWaitsOf(ctx: ApiContext): OpenWaits {
  let open = openWaits.get(ctx);
  if (open === undefined) {
    open = new OpenWaits(ctx.closing$);
    openWaits.set(ctx, open);
  }
  return open;
}

function isPromise<R>(value: R | Promise<R>): value is Promise<R> {
  return typeof (value as { then?: unknown }).then === "function";
}

function timedOut(wait: { finish(why: "timeout"): void }): void {
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
