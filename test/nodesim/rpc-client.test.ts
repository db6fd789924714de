import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Counters } from "../../src/nodesim/counters.ts";
import { RpcClient, RpcError } from "../../src/nodesim/rpc-client.ts";

/** A server that reads every call and answers only the ones `answer` picks, the others never. */
async function serve(answer: (req: IncomingMessage) => boolean): Promise<{ server: Server; url: string }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => {
      if (!answer(req)) return;
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ Index: 7 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe("RpcClient", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  async function client(answer: (req: IncomingMessage) => boolean) {
    const { server, url } = await serve(answer);
    const counters = new Counters();
    const rpc = new RpcClient(url, counters, {
      encoding: "json",
      shortSockets: 4,
      updateSockets: 4,
      blockingSockets: 4,
      callTimeoutMs: 200,
    });
    cleanups.push(() => {
      rpc.close();
      server.closeAllConnections();
      server.close();
    });
    return { rpc, counters };
  }

  it("fails a short call the server never answers as a timeout, and counts it", async () => {
    const { rpc, counters } = await client((req) => req.url !== "/v1/rpc/Node.UpdateStatus");
    const call = rpc.call("Node.UpdateStatus", { NodeID: "n1" }, "secret");
    await expect(call).rejects.toBeInstanceOf(RpcError);
    await expect(call).rejects.toThrow("Node.UpdateStatus: timeout");
    expect(counters.snapshot().errors_by_reason).toEqual({ "Node.UpdateStatus timeout": 1 });
    // The next call on the same node's connection still goes through.
    await expect(rpc.call("Node.Register", {}, "secret")).resolves.toEqual({ Index: 7 });
  });

  it("leaves long polls to their own end: a blocking call outlives the short calls' deadline", async () => {
    const { rpc, counters } = await client((req) => req.url !== "/v1/rpc/Node.GetClientAllocs");
    const abort = new AbortController();
    const poll = rpc.call("Node.GetClientAllocs", {}, "secret", { blocking: true, signal: abort.signal });
    const settled = poll.then(
      () => "answered",
      (e: Error) => e.message,
    );
    // Twice the short calls' deadline: a short call would have failed by now.
    const early = await Promise.race([settled, new Promise((r) => setTimeout(() => r("pending"), 400))]);
    expect(early).toBe("pending");
    abort.abort();
    expect(await settled).toBe("Node.GetClientAllocs: aborted");
    expect(counters.snapshot().errors_by_reason).toEqual({ "Node.GetClientAllocs aborted": 1 });
  });
});
