import { describe, expect, it } from "vitest";
import { benchEventStream } from "../../src/bench/event-stream-bench.ts";
import { type FrameCounts, verifyDelivery } from "../../src/bench/event-stream-subscriber.ts";

describe("event-stream benchmark", () => {
  it("delivers every frame to every subscriber and reports rates, latency and idle memory", async () => {
    const f = await benchEventStream({
      events1: 2_000,
      eventsMany: 1_000,
      subscribers: 3,
      // Enough that their memory stands above what full collections leave
      // behind from one reading to the next (20 once read as -7 KB each).
      idleSubscribers: 200,
      latencySamples: 5,
      nodes: 50,
    });
    for (const rate of [
      f.no_subscriber_events_per_s,
      f.delivery_1_events_per_s,
      f.delivery_100_events_per_s,
    ]) {
      expect(rate).toBeGreaterThan(0);
    }
    expect(f.delivery_100_per_subscriber_events_per_s).toBe(Math.round(f.delivery_100_events_per_s / 3));
    expect(f.delivery_1_server_us_per_event).toBeGreaterThan(0);
    // Five allocation updates per record; the stamp each leaves on its node publishes nothing, as in Nomad.
    expect(f.events_per_frame).toBe(5);
    expect(f.frame_bytes).toBeGreaterThan(1_000);
    expect(f.latency_1_p99_ms).toBeGreaterThanOrEqual(f.latency_1_p50_ms);
    expect(f.latency_100_p99_ms).toBeLessThan(10_000);
    expect(f.idle_subscriber_bytes).toBeGreaterThan(0);
    expect(f.idle_subscriber_bytes).toBeLessThan(1_000_000);
    // Subscriptions a lagging server shed and that were tried again: counted, not failed.
    expect(Number.isInteger(f.idle_subscribe_retries)).toBe(true);
    expect(Number.isInteger(f.delivery_subscribe_retries)).toBe(true);
  }, 120_000);
});

describe("verifyDelivery", () => {
  const expected: FrameCounts = { indexes: [11, 12, 14], events: [10, 10, 2] };
  const check = (indexes: number[], events: number[]) =>
    verifyDelivery("subscriber 0", expected, { indexes, events }, 14);

  it("accepts exactly the server's frames, and later ones", () => {
    expect(() => check([11, 12, 14], [10, 10, 2])).not.toThrow();
    expect(() => check([11, 12, 14, 15], [10, 10, 2, 1])).not.toThrow();
  });

  it("fails on a missing, repeated, reordered, partial or unknown frame", () => {
    expect(() => check([11, 14], [10, 2])).toThrow(
      "subscriber 0: frame 12 is missing (received 14 in its place)",
    );
    expect(() => check([11, 12], [10, 10])).toThrow("frame 14 is missing (received nothing in its place)");
    expect(() => check([11, 12, 12, 14], [10, 10, 10, 2])).toThrow("frame 12 was received twice");
    expect(() => check([12, 11, 14], [10, 10, 2])).toThrow("frame 11 was received after frame 12");
    expect(() => check([11, 12, 14], [10, 9, 2])).toThrow("frame 12 carried 9 events, the server made 10");
    expect(() =>
      verifyDelivery("subscriber 0", expected, { indexes: [11, 12, 14, 15], events: [10, 10, 2, 1] }, 15),
    ).toThrow("frame 15 was never made");
    expect(() =>
      verifyDelivery("subscriber 0", expected, { indexes: [11, 12, 13, 14], events: [10, 10, 1, 2] }, 14),
    ).toThrow("frame 13 was never made");
  });
});
