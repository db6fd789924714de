import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { type RpcCaller, RpcError } from "../../src/nodesim/rpc-client.ts";
import { NodeServiceCalls } from "../../src/nodesim/service-calls.ts";
import { TimerQueue } from "../../src/nodesim/timer-queue.ts";
import { VirtualClock } from "../../src/util/clock.ts";

/** Answers each call with the next scripted outcome: an RpcError to throw, or a reply. */
class ScriptedRpc implements RpcCaller {
  readonly calls: { method: string; at: number; body: unknown; token: string }[] = [];

  constructor(
    private readonly clock: VirtualClock,
    private readonly outcomes: (RpcError | undefined)[],
  ) {}

  async call<T>(method: string, body: unknown, token: string): Promise<T> {
    this.calls.push({ method, at: this.clock.now(), body, token });
    const outcome = this.outcomes.shift();
    if (outcome) throw outcome;
    return { Index: 7 } as T;
  }
}

function calls(outcomes: (RpcError | undefined)[], node = { name: "sim-00000", secret: "s3cret", up: true }) {
  const clock = new VirtualClock();
  const rpc = new ScriptedRpc(clock, outcomes);
  const start = clock.now();
  const service = new NodeServiceCalls(rpc, new TimerQueue(clock), node, pino({ level: "silent" }));
  /** Lets a call run to its end, moving virtual time past every retry. */
  const settle = async <T>(p: Promise<T>): Promise<T> => {
    let done = false;
    void p.finally(() => {
      done = true;
    });
    for (let i = 0; i < 100 && !done; i++) {
      await new Promise((r) => setImmediate(r));
      clock.advance(50);
    }
    return p;
  };
  return { rpc, service, settle, since: (at: number) => at - start };
}

const DELETE = "ServiceRegistration.DeleteByID";

describe("the simulated node's service registration calls", () => {
  it("sends Nomad's request bodies with the node's secret", async () => {
    const { rpc, service, settle } = calls([]);
    await settle(service.upsert([]));
    await settle(service.deleteByID("prod", "_nomad-task-a-app-web-http"));
    expect(rpc.calls.map((c) => [c.method, c.body, c.token])).toEqual([
      ["ServiceRegistration.Upsert", { Services: [], Region: "global" }, "s3cret"],
      [DELETE, { ID: "_nomad-task-a-app-web-http", Namespace: "prod", Region: "global" }, "s3cret"],
    ]);
  });

  it("tries again after no answer or a 5xx, backing off from 100 ms, and gives up after three retries", async () => {
    const unreachable = new RpcError(DELETE, 0, "ECONNREFUSED");
    const { rpc, service, settle, since } = calls([
      unreachable,
      new RpcError(DELETE, 503, "busy"),
      undefined,
    ]);
    await settle(service.deleteByID("default", "x"));
    expect(rpc.calls.map((c) => since(c.at))).toEqual([0, 100, 300]);

    const failing = calls(Array.from({ length: 10 }, () => unreachable));
    await failing.settle(failing.service.deleteByID("default", "x"));
    expect(failing.rpc.calls.map((c) => failing.since(c.at))).toEqual([0, 100, 300, 700]);
  });

  it("takes Nomad's not found as done, and does not retry a refusal", async () => {
    const notFound = calls([new RpcError(DELETE, 404, "service registration not found")]);
    await notFound.settle(notFound.service.deleteByID("default", "x"));
    expect(notFound.rpc.calls).toHaveLength(1);
    const refused = calls([new RpcError("ServiceRegistration.Upsert", 409, "allocation a is complete")]);
    await refused.settle(refused.service.upsert([]));
    expect(refused.rpc.calls).toHaveLength(1);
  });

  it("makes no call while the node cannot reach the servers", async () => {
    const { rpc, service, settle } = calls([], { name: "sim-00000", secret: "s", up: false });
    await settle(service.upsert([]));
    expect(rpc.calls).toHaveLength(0);
  });
});
