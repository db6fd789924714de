import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Counters } from "../../src/nodesim/counters.ts";
import { RpcClient, RpcError } from "../../src/nodesim/rpc-client.ts";
import { serve } from "./answering-server.ts";

describe("RpcClient", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  async function client(answer: (req: IncomingMessage) => boolean | number) {
    const { server, url } = await serve(answer);
    const counters = new Counters();
    const rpc = new RpcClient(url, counters, {
      encoding: "json",
      shortSockets: 4,
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

  it("settles: waits for the short calls already sent and counts them, never for a long poll", async () => {
    const { rpc, counters } = await client((req) =>
      req.url === "/v1/rpc/Node.UpdateStatus" ? 100 : req.url !== "/v1/rpc/Node.GetClientAllocs",
    );
    const abort = new AbortController();
    const poll = rpc
      .call("Node.GetClientAllocs", {}, "secret", { blocking: true, signal: abort.signal })
      .catch(() => "aborted");
    const beat = rpc.call("Node.UpdateStatus", { NodeID: "n1" }, "secret");
    await rpc.settle(5_000);
    await expect(beat).resolves.toEqual({ Index: 7 });
    expect(counters.snapshot().rpc["Node.UpdateStatus"]).toMatchObject({ calls: 1, errors: 0 });
    expect(counters.snapshot().rpc["Node.GetClientAllocs"]).toBeUndefined();
    abort.abort();
    expect(await poll).toBe("aborted");
  });

  it("settles at the latest after the time it is given", async () => {
    const { rpc } = await client((req) => req.url !== "/v1/rpc/Node.UpdateStatus");
    const beat = rpc.call("Node.UpdateStatus", { NodeID: "n1" }, "secret").then(
      () => "answered",
      () => "failed",
    );
    await rpc.settle(20);
    // The call's own deadline (200 ms here) has not come: it is still on its way.
    expect(await Promise.race([beat, Promise.resolve("pending")])).toBe("pending");
    expect(await beat).toBe("failed");
  });

  it("gives each node connections of its own, kept open between its calls", async () => {
    const ports: string[] = [];
    const held: ServerResponse[] = [];
    const server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        ports.push(`${req.headers["x-nomad-token"]} ${req.url} ${req.socket.remotePort}`);
        res.setHeader("content-type", "application/json");
        // Long polls wait until three are held at once: pools bounded in all would never get there.
        if (req.url === "/v1/rpc/Node.GetClientAllocs") {
          held.push(res);
          if (held.length === 3) for (const r of held.splice(0)) r.end("{}");
          return;
        }
        res.end("{}");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const rpc = new RpcClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, new Counters(), {
      encoding: "json",
      shortSockets: 1,
    });
    cleanups.push(() => {
      rpc.close();
      server.closeAllConnections();
      server.close();
    });
    const port = (i: number) => ports[i]!.split(" ")[2];
    for (const node of ["a", "a", "b", "a"]) await rpc.call("Node.UpdateStatus", {}, node);
    for (const node of ["a", "a", "b"]) await rpc.call("Node.UpdateAlloc", {}, node);
    await Promise.all(
      ["a", "b", "c"].map((n) => rpc.call("Node.GetClientAllocs", {}, n, { blocking: true })),
    );
    // a's heartbeats on one connection, b's on another.
    expect(port(1)).toBe(port(0));
    expect(port(3)).toBe(port(0));
    expect(port(2)).not.toBe(port(0));
    // a's updates on one connection of their own, b's on another.
    expect(port(5)).toBe(port(4));
    expect(new Set([port(0), port(2), port(4)]).size).toBe(3);
    expect(port(6)).not.toBe(port(4));
    // Three long polls held at once on three connections.
    expect(new Set([7, 8, 9].map(port)).size).toBe(3);
  });
});

describe("RpcClient's connections per node", () => {
  /** A server that counts connections and holds the calls `hold` picks until released. */
  async function counting(hold: (req: IncomingMessage) => boolean) {
    const seen: { node: string; url: string; port: number }[] = [];
    const held: ServerResponse[] = [];
    let open = 0;
    let mostOpen = 0;
    let opened = 0;
    const server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        seen.push({
          node: String(req.headers["x-nomad-token"]),
          url: req.url ?? "",
          port: req.socket.remotePort ?? 0,
        });
        res.setHeader("content-type", "application/json");
        if (hold(req)) held.push(res);
        else res.end("{}");
      });
    });
    server.on("connection", (socket) => {
      opened++;
      mostOpen = Math.max(mostOpen, ++open);
      socket.on("close", () => open--);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const rpc = new RpcClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, new Counters(), {
      encoding: "json",
      shortSockets: 2,
    });
    return {
      rpc,
      seen,
      held,
      counts: () => ({ opened, mostOpen }),
      close: () => {
        rpc.close();
        server.closeAllConnections();
        server.close();
      },
    };
  }
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });
  const tick = (ms = 50) => new Promise((r) => setTimeout(r, ms));

  it("queues a call of a loop behind the one in flight on its connection, never opening another", async () => {
    const s = await counting((req) => req.url === "/v1/rpc/Node.UpdateAlloc" && s.held.length === 0);
    cleanups.push(s.close);
    const first = s.rpc.call("Node.UpdateAlloc", { n: 1 }, "a");
    const second = s.rpc.call("Node.UpdateAlloc", { n: 2 }, "a");
    await tick(200);
    // The second waits for the first: one call seen, on the one connection.
    expect(s.seen).toHaveLength(1);
    expect(s.counts().opened).toBe(1);
    s.held[0]!.end("{}");
    await Promise.all([first, second]);
    expect(s.seen.map((c) => c.port)).toEqual([s.seen[0]!.port, s.seen[0]!.port]);
    expect(s.counts().opened).toBe(1);
  });

  it("keeps a node's watch loop on one connection, its detach poll on another, N nodes on four sockets each", async () => {
    const polls = new Set(["/v1/rpc/Node.GetClientAllocs", "/v1/rpc/ClientCSI.PendingDetaches"]);
    // Long polls wait for a release, so the detach polls are held while the watch loops run.
    let hold = true;
    const s = await counting((req) => hold && polls.has(req.url ?? ""));
    cleanups.push(s.close);
    const NODES = 20;
    const ROUNDS = 5;
    const nodes = Array.from({ length: NODES }, (_, i) => `node-${i}`);
    const detaches = nodes.map((n) =>
      s.rpc.call("ClientCSI.PendingDetaches", {}, n, { blocking: true }).catch(() => undefined),
    );
    const node = async (n: string) => {
      for (let r = 0; r < ROUNDS; r++) {
        await s.rpc.call("Node.UpdateStatus", {}, n);
        await s.rpc.call("Node.GetClientAllocs", {}, n, {
          blocking: true,
          signal: new AbortController().signal,
        });
        await s.rpc.call("Alloc.GetAllocs", {}, n, { blocking: true });
        await s.rpc.call("Node.UpdateAlloc", {}, n);
      }
    };
    const loops = Promise.all(nodes.map(node));
    // Release the watch loops' polls as they come, leaving the detach polls held.
    const release = setInterval(() => {
      for (let i = s.held.length - 1; i >= 0; i--) {
        const seen = s.seen.find((c) => c.port === s.held[i]!.socket?.remotePort);
        if (seen?.url !== "/v1/rpc/ClientCSI.PendingDetaches") s.held.splice(i, 1)[0]!.end("{}");
      }
    }, 5);
    cleanups.push(() => clearInterval(release));
    await loops;
    hold = false;
    for (const r of s.held.splice(0)) r.end("{}");
    await Promise.all(detaches);
    for (const n of nodes) {
      const ports = (url: string) =>
        new Set(s.seen.filter((c) => c.node === n && c.url === url).map((c) => c.port));
      const watch = new Set([...ports("/v1/rpc/Node.GetClientAllocs"), ...ports("/v1/rpc/Alloc.GetAllocs")]);
      expect(watch.size).toBe(1);
      expect(ports("/v1/rpc/Node.UpdateAlloc").size).toBe(1);
      expect(ports("/v1/rpc/Node.UpdateStatus").size).toBe(1);
      const detach = ports("/v1/rpc/ClientCSI.PendingDetaches");
      expect(detach.size).toBe(1);
      expect(watch.has([...detach][0]!)).toBe(false);
    }
    // Heartbeats, watch, updates and detach polls: four a node, opened once each.
    expect(s.counts().opened).toBe(NODES * 4);
    expect(s.counts().mostOpen).toBe(NODES * 4);
  });
});
