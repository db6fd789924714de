import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { readStream, type StreamFrame } from "./event-stream-client.ts";

const indexes = (frames: StreamFrame[]) => frames.map((f) => f.Index);

describe("GET /v1/event/stream", () => {
  const running: TestServer[] = [];
  const start = async (...args: Parameters<typeof startTestServer>) => {
    const s = await startTestServer(...args);
    running.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop();
  });

  const putNamespaces = async (s: TestServer, names: string[]) => {
    for (const n of names) {
      const r = await s.call(`/v1/namespace/${n}`, { method: "PUT", body: "{}" });
      expect(r.status).toBe(200);
    }
  };

  it("streams Nomad frames for table changes, from the start of the log", async () => {
    const s = await start();
    await putNamespaces(s, ["a", "b"]);
    const { frames } = await readStream(`${s.url}/v1/event/stream?index=0`, (f) =>
      f.some((x) => x.Events?.some((e) => e.Key === "b")),
    );
    expect(frames[0]!.Events![0]).toMatchObject({ Topic: "Namespace", Key: "default", Index: 1 });
    const a = frames.find((f) => f.Events![0]!.Key === "a")!;
    expect(a.Events![0]).toMatchObject({
      Topic: "Namespace",
      Type: "NamespaceUpserted",
      Key: "a",
      Index: a.Index,
      Payload: { Namespace: { Name: "a" } },
    });
    expect(Number.isNaN(Date.parse((a as { Time?: string }).Time ?? ""))).toBe(false);
    const seen = indexes(frames) as number[];
    expect([...seen].sort((x, y) => x - y)).toEqual(seen);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it("publishes deletes on the default stream, and every change with its actor and before-image with changes=all", async () => {
    const s = await start();
    await putNamespaces(s, ["gone"]);
    const del = await s.call("/v1/namespace/gone", {
      method: "DELETE",
      headers: { "User-Agent": "ops-script" },
    });
    expect(del.status).toBe(200);
    const nomad = await readStream(`${s.url}/v1/event/stream?index=0&topic=Namespace`, (f) =>
      f.some((x) => x.Events?.some((e) => e.Type === "NamespaceDeleted")),
    );
    const deleted = nomad.frames.flatMap((f) => f.Events ?? []).find((e) => e.Type === "NamespaceDeleted");
    expect(deleted).toMatchObject({ Key: "gone", Op: "delete", Record: "NamespaceDeleted" });
    // Nomad's own events carry no chronomad field.
    const created = nomad.frames.flatMap((f) => f.Events ?? []).find((e) => e.Key === "gone");
    expect(Object.keys(created!)).toEqual([
      "Topic",
      "Type",
      "Key",
      "Namespace",
      "FilterKeys",
      "Index",
      "Payload",
    ]);

    const all = await readStream(`${s.url}/v1/event/stream?index=0&topic=Namespace&changes=all`, (f) =>
      f.some((x) => x.Events?.some((e) => (e as { Op?: string }).Op === "delete")),
    );
    const changes = all.frames.flatMap((f) => f.Events ?? []) as unknown as Record<string, unknown>[];
    expect(changes.find((e) => e.Key === "gone" && e.Op === "create")).toMatchObject({
      Seq: 0,
      Before: null,
      Actor: { kind: "remote", addr: "127.0.0.1" },
    });
    expect(changes.find((e) => e.Key === "gone" && e.Op === "delete")).toMatchObject({
      Type: "NamespaceDeleted",
      Record: "NamespaceDeleted",
      SchemaVersion: 1,
      Before: { Namespace: { Name: "gone" } },
      Actor: { kind: "remote", userAgent: "ops-script" },
    });
    const refused = await s.call("/v1/event/stream?changes=some");
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/changes/);
  });

  it("delivers every later frame exactly once after a reconnect with index=N", async () => {
    for (const bufferSize of ["10000", "2"]) {
      // With a buffer of 2 events (2 frames here) the older cursor is served by replaying the log.
      const s = await start({ args: ["--event-buffer-size", bufferSize] });
      await putNamespaces(s, ["a", "b", "c"]);
      const first = await readStream(`${s.url}/v1/event/stream?index=0`, (f) => f.length >= 2);
      const seen = first.frames.at(-1)!.Index!;
      await putNamespaces(s, ["d", "e", "f"]);
      const again = await readStream(`${s.url}/v1/event/stream?index=${seen}`, (f) => f.length >= 5);
      expect(indexes(again.frames)).toEqual([seen + 1, seen + 2, seen + 3, seen + 4, seen + 5]);
      const live = readStream(`${s.url}/v1/event/stream?index=${seen + 5}`, (f) => f.length >= 1);
      await putNamespaces(s, ["g"]);
      expect((await live).frames[0]!.Events![0]!.Key).toBe("g");
    }
  });

  it("resumes after a server restart from the index the client saw", async () => {
    const first = await startTestServer({ keepDir: true });
    await putNamespaces(first, ["a", "b"]);
    const seen = first.log.lastIndex();
    await putNamespaces(first, ["c"]);
    await first.close();
    const again = await start({ dataDir: first.dataDir });
    const { frames } = await readStream(`${again.url}/v1/event/stream?index=${seen}`, (f) => f.length >= 1);
    expect(frames[0]).toMatchObject({ Index: seen + 1, Events: [{ Key: "c" }] });
  });

  it("filters by topic and key, and refuses a malformed or unknown topic", async () => {
    const s = await start();
    await putNamespaces(s, ["a", "b"]);
    const { frames } = await readStream(`${s.url}/v1/event/stream?topic=Namespace:b`, (f) => f.length >= 1);
    expect(frames.map((f) => f.Events![0]!.Key)).toEqual(["b"]);
    const bad = await readStream(`${s.url}/v1/event/stream?topic=Node:a:b`, () => true);
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/Invalid topic query/);
    const unknown = await readStream(`${s.url}/v1/event/stream?topic=Nodes`, () => true);
    expect(unknown.status).toBe(400);
    expect(unknown.text).toMatch(/unknown topic "Nodes"/);
  });

  it("closes a subscriber that stops reading with a final frame saying where to resume", async () => {
    const s = await start({ args: ["--event-stream-max-queued", "8"] });
    let socket: { pause(): void; resume(): void } | undefined;
    const stream = readStream(
      `${s.url}/v1/event/stream?index=0`,
      (f) => f.some((x) => x.Error !== undefined),
      {
        onResponse: (res) => {
          socket = res;
          res.pause();
        },
      },
    );
    // Enough frames to fill the socket buffers, then the server-side queue.
    const description = "x".repeat(200);
    for (let batch = 0; batch < 40; batch++) {
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          s.call(`/v1/namespace/n-${batch}-${i}`, {
            method: "PUT",
            body: JSON.stringify({ Description: description }),
          }),
        ),
      );
    }
    socket!.resume();
    const { frames } = await stream;
    const final = frames.at(-1)!;
    expect(final.Error).toMatch(
      /subscriber too slow: more than 8 frames waiting; resubscribe with index=(\d+)/,
    );
    const resumeAt = Number(/index=(\d+)/.exec(final.Error!)![1]);
    expect(frames.at(-2)!.Index).toBeLessThanOrEqual(resumeAt);
    expect(resumeAt).toBeLessThan(s.log.lastIndex());
  });
});
