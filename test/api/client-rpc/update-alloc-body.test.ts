import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { placeAlloc, settle, TestNode } from "../node-fixtures.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
  JSON.parse = parse;
});

const parse = JSON.parse;

/** Weak references to the Node.UpdateAlloc bodies the server parses from now on, and to their task states. */
function watchUpdateAllocBodies(): { bodies: WeakRef<object>[]; taskStates: WeakRef<object>[] } {
  const bodies: WeakRef<object>[] = [];
  const taskStates: WeakRef<object>[] = [];
  // fastify parses JSON bodies with secure-json-parse, which calls JSON.parse.
  JSON.parse = (text: string, reviver?: (this: unknown, key: string, value: unknown) => unknown): unknown => {
    const value: unknown = parse(text, reviver);
    if (value !== null && typeof value === "object" && "Alloc" in value) {
      bodies.push(new WeakRef(value));
      for (const a of (value as { Alloc: { TaskStates?: object }[] }).Alloc) {
        if (a.TaskStates) taskStates.push(new WeakRef(a.TaskStates));
      }
    }
    return value;
  };
  return { bodies, taskStates };
}

describe("Node.UpdateAlloc while its window is pending", () => {
  it("keeps nothing of the request's body once the call's updates are packed", async () => {
    const clock = new VirtualClock();
    const s = await startTestServer({ deps: { clock } });
    running.push(s);
    const node = new TestNode(s);
    expect((await node.register()).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    const alloc = await placeAlloc(s, { NodeID: node.id });

    const watched = watchUpdateAllocBodies();
    const answer = node.rpc("Node.UpdateAlloc", {
      Alloc: [
        {
          ID: alloc.ID,
          NodeID: node.id,
          ClientStatus: "running",
          TaskStates: {
            web: { State: "running", Failed: false, Restarts: 0, Events: [{ Type: "Started" }] },
          },
        },
      ],
    });
    // The virtual clock holds the 50 ms window: the call waits in it.
    for (let waited = 0; watched.bodies.length === 0 && waited < 5_000; waited += 10) {
      await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, 50));
    expect(watched.bodies).toHaveLength(1);
    expect(watched.taskStates).toHaveLength(1);
    gc();
    await new Promise((r) => setImmediate(r));
    gc();
    expect(watched.bodies[0]!.deref()).toBeUndefined();
    expect(watched.taskStates[0]!.deref()).toBeUndefined();

    const answered = await settle(clock, answer);
    expect(answered.status).toBe(200);
    expect(s.store.table<AllocRow>("allocs").get(alloc.ID)?.ClientStatus).toBe("running");
  });
});
