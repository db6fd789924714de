import { describe, expect, it } from "vitest";
import {
  changeEvents,
  changesLine,
  type Frame,
  FrameBuilder,
  frameLine,
  type RecordFrame,
  type StreamEvent,
} from "../../src/events/frames.ts";
import type { Change } from "../../src/store/projection.ts";
import type { Envelope } from "../../streams/event-schema.ts";

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
  Changes: [],
};
const json = (f: Frame) => JSON.stringify({ Index: f.Index, Time: f.Time, Events: f.Events });

describe("frameLine", () => {
  it("encodes a whole frame once, as the bytes of its JSON line, for every subscriber", () => {
    const line = frameLine(frame, frame.Events);
    expect(line.toString("utf8")).toBe(`${json(frame)}\n`);
    expect(frameLine(frame, frame.Events)).toBe(line);
  });

  it("encodes a filtered frame as JSON.stringify of the frame with only the kept events", () => {
    const kept = frame.Events.filter((e) => e.Namespace === "default");
    const line = frameLine(frame, kept).toString("utf8");
    expect(line).toBe(`${json({ ...frame, Events: kept })}\n`);
    expect(JSON.parse(line)).toEqual({ Index: frame.Index, Time: frame.Time, Events: kept });
    expect(frameLine(frame, [frame.Events[1]!]).toString("utf8")).toBe(
      `${json({ ...frame, Events: [frame.Events[1]!] })}\n`,
    );
  });

  it("encodes the next frame afresh", () => {
    const next: Frame = { ...frame, Index: 8, Events: [event("d", "default")] };
    frameLine(frame, frame.Events);
    expect(frameLine(next, next.Events).toString("utf8")).toBe(`${json(next)}\n`);
    expect(frameLine(frame, frame.Events).toString("utf8")).toBe(`${json(frame)}\n`);
  });
});

describe("FrameBuilder", () => {
  const envelope = (type: string): Envelope => ({
    type,
    v: 2,
    at: Date.UTC(2026, 10, 22),
    by: { kind: "token", id: "acc-1", name: "ops" },
    cause: { type: "NodeDrainUpdated", index: 4, nodeId: "n1" },
    data: {},
  });
  const build = (changes: Omit<Change, "event" | "at">[]): Frame[] => {
    const frames: Frame[] = [];
    const builder = new FrameBuilder((f) => frames.push(f));
    for (const c of changes) builder.add({ ...c, event: c.envelope.type, at: c.envelope.at });
    builder.flush();
    return frames;
  };
  const alloc = (status: string) => ({ ID: "a1", Namespace: "default", JobID: "web", ClientStatus: status });

  it("merges several changes of one object in one record into one, from its first before to its last after", () => {
    const e = envelope("AllocsPlanApplied");
    const [frame] = build([
      {
        table: "allocs",
        key: "a1",
        before: alloc("pending"),
        after: alloc("running"),
        index: 9,
        envelope: e,
      },
      {
        table: "allocs",
        key: "a1",
        before: alloc("running"),
        after: alloc("complete"),
        index: 9,
        envelope: e,
      },
    ]);
    expect(frame!.Events).toHaveLength(1);
    const [change] = changeEvents(frame!);
    expect(change).toMatchObject({
      Op: "update",
      Seq: 0,
      Before: { Allocation: { ClientStatus: "pending" } },
      Payload: { Allocation: { ClientStatus: "complete" } },
    });
  });

  it("tells nothing of an object created and removed by one record", () => {
    const e = envelope("AllocsPlanApplied");
    const frames = build([
      { table: "allocs", key: "a1", before: undefined, after: alloc("pending"), index: 9, envelope: e },
      { table: "allocs", key: "a1", before: alloc("pending"), after: undefined, index: 9, envelope: e },
    ]);
    expect(frames).toEqual([]);
  });

  it("keeps changes Nomad publishes nothing for in the complete feed only, named by their record", () => {
    const e = envelope("AllocClientUpdated");
    const [frame] = build([
      { table: "nodes", key: "n1", before: { ID: "n1" }, after: { ID: "n1", X: 1 }, index: 9, envelope: e },
      {
        table: "allocs",
        key: "a1",
        before: alloc("pending"),
        after: alloc("running"),
        index: 9,
        envelope: e,
      },
      { table: "history", key: "h", before: undefined, after: { Key: "h" }, index: 9, envelope: e },
    ]);
    expect(frame!.Events.map((x) => x.Topic)).toEqual(["Allocation"]);
    const changes = changeEvents(frame!);
    expect(changes.map((x) => [x.Topic, x.Type, x.Seq])).toEqual([
      ["Node", "AllocClientUpdated", 0],
      ["Allocation", "AllocationUpdated", 1],
    ]);
    expect(changes[1]).toMatchObject({
      Record: "AllocClientUpdated",
      SchemaVersion: 2,
      Actor: { kind: "token", id: "acc-1" },
      Cause: { type: "NodeDrainUpdated", index: 4 },
    });
    const line = JSON.parse(changesLine(frame!, [1]).toString("utf8"));
    expect(line.Events).toEqual([JSON.parse(JSON.stringify(changes[1]))]);
    expect(line.Index).toBe(9);
  });

  it("builds the same events and changes whichever is asked for first, and again after a release", () => {
    const e = envelope("GarbageCollected");
    const u = envelope("AllocClientUpdated");
    const changes: Omit<Change, "event" | "at">[] = [
      { table: "nodes", key: "n1", before: { ID: "n1" }, after: { ID: "n1", X: 1 }, index: 9, envelope: u },
      {
        table: "allocs",
        key: "a1",
        before: alloc("pending"),
        after: alloc("running"),
        index: 9,
        envelope: u,
      },
      { table: "allocs", key: "a2", before: undefined, after: alloc("pending"), index: 9, envelope: u },
      { table: "allocs", key: "a3", before: alloc("failed"), after: undefined, index: 9, envelope: e },
      {
        table: "evals",
        key: "e1",
        before: { ID: "e1", JobID: "web" },
        after: undefined,
        index: 9,
        envelope: e,
      },
    ];
    const seen = (f: Frame, eventsFirst: boolean) => {
      const events = eventsFirst ? f.Events : undefined;
      const all = changeEvents(f);
      return JSON.stringify([events ?? f.Events, all, f.Time]);
    };
    const [a] = build(changes);
    const [b] = build(changes);
    const eventsFirst = seen(a!, true);
    expect(seen(b!, false)).toBe(eventsFirst);
    expect(a!.Events.map((x) => [x.Type, x.Op ?? ""])).toEqual([
      ["AllocationUpdated", ""],
      ["AllocationUpdated", ""],
      ["AllocationDeleted", "delete"],
      ["EvaluationDeleted", "delete"],
    ]);
    // The events a change carries are the frame's own, not copies.
    expect(a!.Changes.filter((c) => c.event).map((c) => c.event)).toEqual(a!.Events);
    expect(a!.Changes[1]!.event).toBe(a!.Events[0]);
    (a as RecordFrame).release();
    (b as RecordFrame).release();
    expect(seen(a!, false)).toBe(eventsFirst);
    expect(seen(b!, true)).toBe(eventsFirst);
    expect(b!.Changes[1]!.event).toBe(b!.Events[0]);
  });

  it("marks progress with an empty frame when records after the last frame published nothing", () => {
    const frames: Frame[] = [];
    const builder = new FrameBuilder((f) => frames.push(f));
    const e = envelope("NamespaceUpserted");
    builder.add({
      table: "namespaces",
      key: "a",
      before: undefined,
      after: { Name: "a" },
      index: 4,
      event: e.type,
      at: e.at,
      envelope: e,
    });
    builder.flush(4);
    builder.flush(7);
    builder.flush(7);
    expect(frames.map((f) => [f.Index, f.Events.length, f.Changes.length])).toEqual([
      [4, 1, 1],
      [7, 0, 0],
    ]);
  });
});
