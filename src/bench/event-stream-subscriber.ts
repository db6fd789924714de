import { type Agent, type ClientRequest, request } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { type RetryPolicy, retryDelayMs, SUBSCRIBE_RETRY } from "./event-stream-retry.ts";

/** Frames as index and event count, in parallel arrays (compact for 100k frames). */
export interface FrameCounts {
  readonly indexes: number[];
  readonly events: number[];
}

/** Wall-clock milliseconds, comparable between the bench and its server process. */
export const epochMs = () => performance.timeOrigin + performance.now();

interface Waiter {
  readonly index: number;
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
}

/** The server answered the subscription with something other than a stream. */
export class StreamRefused extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    /** The answer's `Retry-After`, as sent. */
    readonly retryAfter: string | undefined,
  ) {
    super(message);
  }
}

/**
 * A client of `GET /v1/event/stream` over real HTTP: it parses every NDJSON
 * line, and records each frame's index, event count and arrival time for
 * the checks and the latency figures.
 */
export class StreamSubscriber {
  readonly received: FrameCounts = { indexes: [], events: [] };
  readonly arrivedAt: number[] = [];
  lastIndex: number;
  /** Times the subscription was answered 429 and tried again before the stream opened. */
  retries = 0;
  /** Characters received, heartbeats included: bytes, as the stream is ASCII JSON. */
  bytes = 0;
  private failure: Error | undefined;
  private waiters: Waiter[] = [];
  private closed = false;
  private readonly req: ClientRequest;

  private constructor(
    readonly name: string,
    url: string,
    agent: Agent,
    after: number,
    private readonly connected: { resolve: () => void; reject: (err: Error) => void },
  ) {
    this.lastIndex = after;
    let heartbeats = 0;
    this.req = request(`${url}/v1/event/stream?index=${after}`, { agent }, (res) => {
      if (res.statusCode !== 200) {
        const header = res.headers["retry-after"];
        const refused = new StreamRefused(
          `${name}: the stream answered ${res.statusCode}`,
          res.statusCode,
          Array.isArray(header) ? header[0] : header,
        );
        // Read to its end, so that the connection goes back to the agent for the retry.
        res.resume();
        res.on("end", () => this.fail(refused));
        res.on("error", (err) => this.fail(err));
        return;
      }
      res.setEncoding("utf8");
      let partial = "";
      res.on("data", (chunk: string) => {
        const at = epochMs();
        this.bytes += chunk.length;
        partial += chunk;
        let start = 0;
        for (let nl = partial.indexOf("\n"); nl >= 0; nl = partial.indexOf("\n", start)) {
          const line = partial.slice(start, nl);
          start = nl + 1;
          // The server writes `{}` as soon as it has subscribed: the stream is live from then on.
          if (line === "{}") {
            if (heartbeats++ === 0) this.connected.resolve();
          } else this.frame(line, at);
        }
        partial = partial.slice(start);
        this.wake();
      });
      res.on("close", () => this.fail(new Error(`${name}: the server ended the stream`)));
    });
    this.req.on("error", (err) => this.fail(err));
    this.req.end();
  }

  /**
   * Subscribes after `after` and resolves once the server has the
   * subscription. A 429 (load shed, or the subscriber cap) is tried again
   * as `policy` says, counted in `retries`; any other refusal, or a 429
   * past the policy's tries or wait, fails.
   */
  static async open(
    name: string,
    url: string,
    agent: Agent,
    after: number,
    policy: RetryPolicy = SUBSCRIBE_RETRY,
  ): Promise<StreamSubscriber> {
    for (let retries = 0; ; retries++) {
      try {
        const s = await StreamSubscriber.attempt(name, url, agent, after);
        s.retries = retries;
        return s;
      } catch (err) {
        if (!(err instanceof StreamRefused) || err.status !== 429) throw err;
        const wait = retryDelayMs(policy, retries + 1, err.retryAfter);
        if (wait === undefined) {
          const tries = retries + 1;
          const asked = err.retryAfter === undefined ? "" : ` (Retry-After: ${err.retryAfter})`;
          const why =
            tries >= policy.tries ? `gave up after ${tries} tries` : `a wait longer than ${policy.maxMs} ms`;
          throw new StreamRefused(`${err.message}${asked} to try ${tries}: ${why}`, 429, err.retryAfter);
        }
        await sleep(wait);
      }
    }
  }

  private static attempt(name: string, url: string, agent: Agent, after: number): Promise<StreamSubscriber> {
    return new Promise((resolve, reject) => {
      const s: StreamSubscriber = new StreamSubscriber(name, url, agent, after, {
        resolve: () => resolve(s),
        reject,
      });
    });
  }

  /** Resolves once a frame with Index >= `index` arrived; rejects if the stream fails first. */
  until(index: number): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.lastIndex >= index) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ index, resolve, reject }));
  }

  /** When the frame `index` arrived (epoch ms), searching from the newest. */
  arrivalOf(index: number): number {
    for (let i = this.received.indexes.length - 1; i >= 0; i--) {
      if (this.received.indexes[i] === index) return this.arrivedAt[i]!;
    }
    throw new Error(`${this.name}: frame ${index} never arrived`);
  }

  close(): void {
    this.closed = true;
    this.req.destroy();
  }

  private frame(line: string, at: number): void {
    const frame = JSON.parse(line) as { Index?: unknown; Events?: unknown; Error?: unknown };
    if (frame.Error !== undefined) {
      this.fail(new Error(`${this.name}: the server ended the stream: ${String(frame.Error)}`));
      return;
    }
    if (typeof frame.Index !== "number" || !Array.isArray(frame.Events)) {
      this.fail(new Error(`${this.name}: malformed frame ${line.slice(0, 200)}`));
      return;
    }
    this.received.indexes.push(frame.Index);
    this.received.events.push(frame.Events.length);
    this.arrivedAt.push(at);
    this.lastIndex = frame.Index;
  }

  private wake(): void {
    if (this.waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (this.lastIndex >= w.index) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }

  private fail(err: Error): void {
    if (this.closed || this.failure) return;
    this.failure = err;
    // Settles nothing once connected: a promise settles once.
    this.connected.reject(err);
    for (const w of this.waiters) w.reject(err);
    this.waiters = [];
    // After a refusal read to its end, the connection is back with the agent already: this leaves it there.
    this.req.destroy();
  }
}

/**
 * Throws unless `received` holds exactly the frames of `expected`, in order,
 * each once and with all its events; frames after `upTo` are allowed (the
 * stream goes on) but must still be in order.
 */
export function verifyDelivery(
  who: string,
  expected: FrameCounts,
  received: FrameCounts,
  upTo: number,
): void {
  const got = received.indexes;
  for (let i = 1; i < got.length; i++) {
    if (got[i]! <= got[i - 1]!) {
      const what = got[i] === got[i - 1] ? "twice" : `after frame ${got[i - 1]}`;
      throw new Error(`${who}: frame ${got[i]} was received ${what}`);
    }
  }
  const want = expected.indexes;
  for (let i = 0; i < want.length; i++) {
    const g = got[i];
    if (g !== undefined && g < want[i]!) throw new Error(`${who}: frame ${g} was never made`);
    if (g !== want[i]) {
      throw new Error(`${who}: frame ${want[i]} is missing (received ${g ?? "nothing"} in its place)`);
    }
    if (received.events[i] !== expected.events[i]) {
      throw new Error(
        `${who}: frame ${want[i]} carried ${received.events[i]} events, the server made ${expected.events[i]}`,
      );
    }
  }
  const extra = got[want.length];
  if (extra !== undefined && extra <= upTo) throw new Error(`${who}: frame ${extra} was never made`);
}
