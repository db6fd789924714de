import { describe, expect, it } from "vitest";
import { type RetryPolicy, retryAfterMs, retryDelayMs } from "../../src/bench/event-stream-retry.ts";

const policy: RetryPolicy = { tries: 4, baseMs: 100, maxMs: 1_000 };
const now = Date.parse("2026-11-29T16:00:00Z");
const noJitter = () => 0;
const fullJitter = () => 0.999_999;

describe("retryAfterMs", () => {
  it("reads delta-seconds and HTTP-dates", () => {
    expect(retryAfterMs("1", now)).toBe(1_000);
    expect(retryAfterMs(" 0 ", now)).toBe(0);
    expect(retryAfterMs("Sun, 29 Nov 2026 16:00:02 GMT", now)).toBe(2_000);
    // A date already past asks for no wait.
    expect(retryAfterMs("Sun, 29 Nov 2026 15:59:00 GMT", now)).toBe(0);
  });

  it("ignores what it cannot read", () => {
    expect(retryAfterMs(undefined, now)).toBeUndefined();
    expect(retryAfterMs("", now)).toBeUndefined();
    expect(retryAfterMs("1.5", now)).toBeUndefined();
    expect(retryAfterMs("-1", now)).toBeUndefined();
    expect(retryAfterMs("soon", now)).toBeUndefined();
  });
});

describe("retryDelayMs", () => {
  it("waits at least what Retry-After asks, with some spread", () => {
    expect(retryDelayMs(policy, 1, "0", noJitter, now)).toBe(0);
    expect(retryDelayMs(policy, 1, "Sun, 29 Nov 2026 16:00:00.5 GMT", noJitter, now)).toBe(500);
    const spread = retryDelayMs(policy, 3, "Sun, 29 Nov 2026 16:00:00.5 GMT", fullJitter, now)!;
    expect(spread).toBeGreaterThan(500);
    expect(spread).toBeLessThanOrEqual(600);
  });

  it("backs off exponentially without Retry-After, up to the longest wait", () => {
    expect([1, 2, 3].map((r) => retryDelayMs(policy, r, undefined, noJitter, now))).toEqual([100, 200, 400]);
    const long: RetryPolicy = { tries: 10, baseMs: 100, maxMs: 1_000 };
    expect(retryDelayMs(long, 5, undefined, noJitter, now)).toBe(1_000);
    // The spread does not take it past the longest wait either.
    expect(retryDelayMs(long, 9, "garbage", fullJitter, now)).toBe(1_000);
    expect(retryDelayMs(policy, 1, "1", fullJitter, now)).toBe(1_000);
  });

  it("gives up once the tries are spent, or when asked to wait longer than it would", () => {
    expect(retryDelayMs(policy, 4, "0", noJitter, now)).toBeUndefined();
    expect(retryDelayMs(policy, 1, "2", noJitter, now)).toBeUndefined();
    expect(retryDelayMs({ ...policy, tries: 1 }, 1, undefined, noJitter, now)).toBeUndefined();
  });
});
