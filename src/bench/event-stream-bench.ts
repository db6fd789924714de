import { Agent } from "node:http";
import type { Memory, Written } from "./event-stream-server.ts";
import { BenchServer } from "./event-stream-server-process.ts";
import { type FrameCounts, StreamSubscriber, verifyDelivery } from "./event-stream-subscriber.ts";
import { percentile } from "./percentile.ts";

export interface EventStreamFigures {
  /** Events the server applies per second with no subscriber: the ceiling for delivery. */
  readonly no_subscriber_events_per_s: number;
  /** Events delivered per second to one subscriber. */
  readonly delivery_1_events_per_s: number;
  /** Server CPU (apply, framing, writes) per event delivered: what the rate costs, whoever limits it. */
  readonly delivery_1_server_us_per_event: number;
  /** Events delivered per second, summed over the 100 subscribers. */
  readonly delivery_100_events_per_s: number;
  /** The same, as each of the 100 subscribers sees it. */
  readonly delivery_100_per_subscriber_events_per_s: number;
  readonly delivery_100_server_us_per_event: number;
  /** Append resolved -> frame arrived at the subscriber, one record at a time. */
  readonly latency_1_p50_ms: number;
  readonly latency_1_p99_ms: number;
  /**
   * The same over every (record, subscriber) pair of the 100; the 100 share
   * one client process, so it includes that client parsing the frame for
   * the subscribers served before.
   */
  readonly latency_100_p50_ms: number;
  readonly latency_100_p99_ms: number;
  /** Server JS heap per open subscriber that receives nothing, after full GCs. */
  readonly idle_subscriber_bytes: number;
  /** The same from the server's RSS: includes native memory, but also allocator noise. */
  readonly idle_subscriber_rss_bytes: number;
  readonly events_per_frame: number;
  readonly frame_bytes: number;
  /**
   * Subscriptions the server turned away with 429 (load shed while its loop
   * lagged, or the subscriber cap) and that were tried again, after the
   * wait its `Retry-After` asked (event-stream-retry.ts): in the idle
   * phase, and in the three delivery phases. Each opens before its phase's
   * clock starts, so a retry delays the run, not a figure.
   */
  readonly idle_subscribe_retries: number;
  readonly delivery_subscribe_retries: number;
}

export interface EventStreamOptions {
  /** Events written while one subscriber reads, and while none does (default 100,000). */
  readonly events1?: number;
  /** Events written while `subscribers` read (default 20,000, so 2,000,000 delivered). */
  readonly eventsMany?: number;
  /** The 100 of delivery_100 (smaller in tests). */
  readonly subscribers?: number;
  readonly idleSubscribers?: number;
  readonly latencySamples?: number;
  /** Nodes, each with one allocation whose client updates are the events. */
  readonly nodes?: number;
  /** Allocation updates per log record, as the 50 ms coalescer groups them (one Allocation event each). */
  readonly allocsPerRecord?: number;
}

/** Records per append, and appends written ahead of the slowest subscriber. */
const BATCH = 100;
const WINDOW = 4;

/**
 * `/v1/event/stream` against a server in its own process: delivery rate to
 * one and to 100 subscribers, delivery latency, and the server memory an
 * idle subscriber costs. Events come from real log records (coalesced
 * client alloc updates, each changing an allocation and its node) appended
 * in batches, so what is measured is apply, framing and delivery rather
 * than HTTP writes. Every subscriber must receive every frame the server
 * made, once and in order, or the benchmark fails.
 */
export async function benchEventStream(options: EventStreamOptions = {}): Promise<EventStreamFigures> {
  const allocsPerRecord = options.allocsPerRecord ?? 5;
  // Each allocation update also updates its node: two events.
  const records = (events: number) => Math.max(1, Math.round(events / (2 * allocsPerRecord)));
  const events1 = records(options.events1 ?? 100_000);
  const samples = options.latencySamples ?? 200;
  const many = options.subscribers ?? 100;
  const server = await BenchServer.start();
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  try {
    const setUp = await server.call<number>({ op: "setup", nodes: options.nodes ?? 1_000 });
    // First, before the delivery phases have grown the server's heap.
    const idle = await idleMemory(server, agent, options.idleSubscribers ?? 1_000, setUp);
    const phase = { server, agent, allocsPerRecord };
    const none = await deliver({ ...phase, subscribers: 0, records: events1, samples: 0, after: setUp });
    const one = await deliver({ ...phase, subscribers: 1, records: events1, samples, after: none.last });
    const hundred = await deliver({
      ...phase,
      subscribers: many,
      records: records(options.eventsMany ?? 20_000),
      samples,
      after: one.last,
    });
    return {
      no_subscriber_events_per_s: none.eventsPerS,
      delivery_1_events_per_s: one.eventsPerS,
      delivery_1_server_us_per_event: one.serverUsPerEvent,
      delivery_100_events_per_s: hundred.eventsPerS,
      delivery_100_per_subscriber_events_per_s: Math.round(hundred.eventsPerS / many),
      delivery_100_server_us_per_event: hundred.serverUsPerEvent,
      latency_1_p50_ms: percentile(one.latencies, 0.5),
      latency_1_p99_ms: percentile(one.latencies, 0.99),
      latency_100_p50_ms: percentile(hundred.latencies, 0.5),
      latency_100_p99_ms: percentile(hundred.latencies, 0.99),
      idle_subscriber_bytes: idle.heap,
      idle_subscriber_rss_bytes: idle.rss,
      events_per_frame: Math.round((one.events / one.frames) * 10) / 10,
      frame_bytes: one.frameBytes,
      idle_subscribe_retries: idle.retries,
      delivery_subscribe_retries: none.retries + one.retries + hundred.retries,
    };
  } finally {
    agent.destroy();
    await server.stop();
  }
}

interface Phase {
  readonly server: BenchServer;
  readonly agent: Agent;
  readonly subscribers: number;
  readonly records: number;
  readonly allocsPerRecord: number;
  /** Single records written one at a time, for latency, after the bulk. */
  readonly samples: number;
  /** The index the subscribers start after. */
  readonly after: number;
}

interface Delivery {
  /** Events delivered per second, over all subscribers (applied, with none). */
  readonly eventsPerS: number;
  readonly serverUsPerEvent: number;
  /** Events and frames of the bulk, as the server made them. */
  readonly events: number;
  readonly frames: number;
  readonly frameBytes: number;
  readonly latencies: number[];
  readonly last: number;
  /** Subscriptions answered 429 and tried again. */
  readonly retries: number;
}

/**
 * The phase's subscribers subscribe; its records are written as fast as the
 * slowest of them reads (a bounded window of appends, so none is cut off as
 * too slow), then single records one at a time for latency. Every
 * subscriber's frames are checked against the server's at the end.
 */
async function deliver(p: Phase): Promise<Delivery> {
  const { server } = p;
  const subs = await Promise.all(
    Array.from({ length: p.subscribers }, (_, i) =>
      StreamSubscriber.open(`subscriber ${i}`, server.url, p.agent, p.after),
    ),
  );
  try {
    const reached = (index: number) => Promise.all(subs.map((s) => s.until(index)));
    const write = (records: number) =>
      server.call<Written>({ op: "write", records, allocsPerRecord: p.allocsPerRecord });
    const cpuBefore = await server.call<number>({ op: "cpu" });
    const started = performance.now();
    const inFlight: Promise<Written>[] = [];
    for (let written = 0; written < p.records; written += BATCH) {
      if (inFlight.length === WINDOW) await reached((await inFlight.shift()!).last);
      inFlight.push(write(Math.min(BATCH, p.records - written)));
    }
    let last = p.after;
    for (const w of inFlight) last = (await w).last;
    await reached(last);
    const seconds = (performance.now() - started) / 1000;
    const cpuMs = (await server.call<number>({ op: "cpu" })) - cpuBefore;
    const bulk = await server.call<FrameCounts>({ op: "expected", after: p.after, upTo: last });
    const events = bulk.events.reduce((a, b) => a + b, 0);
    const delivered = events * Math.max(1, p.subscribers);
    const bytes = subs[0]?.bytes ?? 0;

    const latencies: number[] = [];
    for (let i = 0; i < p.samples; i++) {
      const w = await write(1);
      await reached(w.last);
      for (const s of subs) latencies.push(s.arrivalOf(w.last) - w.resolvedAt);
      last = w.last;
    }

    const expected = await server.call<FrameCounts>({ op: "expected", after: p.after, upTo: last });
    for (const s of subs) verifyDelivery(s.name, expected, s.received, last);
    return {
      eventsPerS: Math.round(delivered / seconds),
      serverUsPerEvent: Math.round((cpuMs * 1000 * 100) / delivered) / 100,
      events,
      frames: bulk.indexes.length,
      frameBytes: Math.round(bytes / Math.max(1, bulk.indexes.length)),
      latencies,
      last,
      retries: retriesOf(subs),
    };
  } finally {
    for (const s of subs) s.close();
  }
}

/** Server memory per subscriber, from `count` subscribers that receive nothing. */
async function idleMemory(server: BenchServer, agent: Agent, count: number, after: number) {
  // A first round so code and pools a connection needs exist before the baseline.
  const warm = await openMany(server.url, agent, Math.min(count, 50), after);
  let retries = retriesOf(warm);
  for (const s of warm) s.close();
  const before = await server.call<Memory>({ op: "memory" });
  const subs = await openMany(server.url, agent, count, after);
  const during = await server.call<Memory>({ op: "memory" });
  retries += retriesOf(subs);
  for (const s of subs) s.close();
  return {
    retries,
    rss: Math.round((during.rss - before.rss) / count),
    heap: Math.round((during.heapUsed - before.heapUsed) / count),
  };
}

function retriesOf(subs: readonly StreamSubscriber[]): number {
  let n = 0;
  for (const s of subs) n += s.retries;
  return n;
}

async function openMany(
  url: string,
  agent: Agent,
  count: number,
  after: number,
): Promise<StreamSubscriber[]> {
  const subs: StreamSubscriber[] = [];
  // A few at a time: the server's accept backlog is finite.
  for (let i = 0; i < count; i += 100) {
    const n = Math.min(100, count - i);
    subs.push(
      ...(await Promise.all(
        Array.from({ length: n }, (_, j) =>
          StreamSubscriber.open(`idle subscriber ${i + j}`, url, agent, after),
        ),
      )),
    );
  }
  return subs;
}
