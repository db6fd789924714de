import { describe, expect, it } from "vitest";
import { type Frame, frameLine, type StreamEvent } from "../../src/events/frames.ts";

const event = (key: string, namespace: string): StreamEvent => ({
  Topic: "Allocation",
  Type: "AllocationUpdated",
  Key: key,
  Namespace: namespace,
  FilterKeys: ["web"],
  Index: 7,
  Payload: { Allocation: { ID: key, Namespace: namespace, ClientDescription: 'says "hi" – ✓' } },
});

const frame: Frame = {
  Index: 7,
  Time: "2026-11-22T12:00:00.000Z",
  Events: [event("a", "default"), event("b", "other"), event("c", "default")],
};

describe("frameLine", () => {
  it("encodes a whole frame once, as the bytes of its JSON line, for every subscriber", () => {
    const line = frameLine(frame, frame.Events);
    expect(line.toString("utf8")).toBe(`${JSON.stringify(frame)}\n`);
    expect(frameLine(frame, frame.Events)).toBe(line);
  });

  it("encodes a filtered frame as JSON.stringify of the frame with only the kept events", () => {
    const kept = frame.Events.filter((e) => e.Namespace === "default");
    const line = frameLine(frame, kept).toString("utf8");
    expect(line).toBe(`${JSON.stringify({ ...frame, Events: kept })}\n`);
    expect(JSON.parse(line)).toEqual({ ...frame, Events: kept });
    expect(frameLine(frame, [frame.Events[1]!]).toString("utf8")).toBe(
      `${JSON.stringify({ ...frame, Events: [frame.Events[1]] })}\n`,
    );
  });

  it("encodes the next frame afresh", () => {
    const next: Frame = { ...frame, Index: 8, Events: [event("d", "default")] };
    frameLine(frame, frame.Events);
    expect(frameLine(next, next.Events).toString("utf8")).toBe(`${JSON.stringify(next)}\n`);
    expect(frameLine(frame, frame.Events).toString("utf8")).toBe(`${JSON.stringify(frame)}\n`);
  });
});
