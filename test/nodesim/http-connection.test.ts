import { getEventListeners } from "node:events";
import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Counters } from "../../src/nodesim/counters.ts";
import { ConnectionPerCall } from "../../src/nodesim/http-connection.ts";
import { RpcClient } from "../../src/nodesim/rpc-client.ts";

/**
 * A server on raw sockets: records what arrives on each connection and
 * answers each request (a head and a body of content-length bytes) with
 * `reply(index)`, a whole HTTP response (undefined: none; null: the
 * connection is closed).
 */
async function rawServer(reply: (index: number, head: string) => string | null | undefined) {
  const received: { port: number; text: string; socket: Socket }[] = [];
  const sockets = new Set<Socket>();
  let opened = 0;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    opened++;
    socket.on("close", () => sockets.delete(socket));
    let buf = "";
    socket.on("data", (d) => {
      buf += d.toString("latin1");
      for (;;) {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buf.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + length) return;
        const text = buf.slice(0, end + 4 + length);
        buf = buf.slice(text.length);
        received.push({ port: socket.remotePort ?? 0, text, socket });
        const out = reply(received.length - 1, head);
        if (out === null) socket.destroy();
        else if (out !== undefined) socket.write(out);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    open: () => sockets.size,
    opened: () => opened,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

const ok = (body: string, extra = "") =>
  `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n${extra}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

const options = { encoding: "json" as const, shortSockets: 2, callTimeoutMs: 2_000 };

describe("RpcClient on undici's connections", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  async function setup(reply: (index: number, head: string) => string | null | undefined) {
    const srv = await rawServer(reply);
    const counters = new Counters();
    const rpc = new RpcClient(srv.url, counters, options);
    cleanups.push(() => {
      rpc.close();
      srv.close();
    });
    return { srv, rpc, counters };
  }

  it("sends the method, the body and the headers http.request sent", async () => {
    const { srv, rpc } = await setup(() => ok("{}"));
    await rpc.call("Node.UpdateStatus", { NodeID: "n1" }, "secret-1");
    await rpc.call("Node.UpdateAlloc", { Alloc: [] }, "secret-1");
    const [beat, update] = srv.received.map((r) => r.text);
    expect(beat).toMatch(/^PUT \/v1\/rpc\/Node\.UpdateStatus HTTP\/1\.1\r\n/);
    expect(beat).toMatch(/\r\ncontent-type: application\/json\r\n/);
    expect(beat).toMatch(/\r\nx-nomad-token: secret-1\r\n/);
    expect(beat).toMatch(/\r\nx-nodesim-sent-at: \d+\.\d{3}\r\n/);
    expect(beat).toMatch(/\r\nconnection: keep-alive\r\n/);
    expect(beat).toMatch(/\r\ncontent-length: 15\r\n\r\n\{"NodeID":"n1"\}$/);
    expect(update).not.toMatch(/x-nodesim-sent-at/);
    expect(update).toMatch(/\r\n\r\n\{"Alloc":\[\]\}$/);
  });

  it("sends a body of multi-byte text as its UTF-8 bytes, with their count as its length", async () => {
    const { srv, rpc } = await setup(() => ok("{}"));
    await rpc.call("Node.UpdateAlloc", { Alloc: [{ ClientDescription: "Tâche démarrée ✓" }] }, "n");
    const body = JSON.stringify({ Alloc: [{ ClientDescription: "Tâche démarrée ✓" }] });
    expect(srv.received[0]!.text).toContain(`\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`);
    expect(Buffer.from(srv.received[0]!.text, "latin1").toString("utf8").endsWith(body)).toBe(true);
  });

  it("leaves nothing on a call's signal once the call is answered, failed or aborted", async () => {
    const { rpc } = await setup((i) => (i === 0 ? ok('{"N":0}') : i <= 2 ? null : undefined));
    const signal = new AbortController().signal;
    await expect(rpc.call("Node.GetClientAllocs", {}, "n", { blocking: true, signal })).resolves.toEqual({
      N: 0,
    });
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
    await expect(rpc.call("Node.GetClientAllocs", {}, "n", { blocking: true, signal })).rejects.toThrow(
      "ECONNRESET",
    );
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
    const abort = new AbortController();
    const poll = rpc.call("Node.GetClientAllocs", {}, "n", { blocking: true, signal: abort.signal });
    await new Promise((r) => setTimeout(r, 20));
    expect(getEventListeners(abort.signal, "abort")).toHaveLength(1);
    abort.abort();
    await expect(poll).rejects.toThrow("Node.GetClientAllocs: aborted");
    expect(getEventListeners(abort.signal, "abort")).toHaveLength(0);
  });

  it("reads chunked replies and replies that end with the connection, and reconnects after a close", async () => {
    const { rpc } = await setup((i) =>
      i === 0
        ? 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n4\r\n{"A"\r\n3\r\n:1}\r\n0\r\n\r\n'
        : i === 1
          ? ok('{"B":2}', "connection: close\r\n")
          : ok('{"C":3}'),
    );
    await expect(rpc.call("Node.UpdateAlloc", {}, "n")).resolves.toEqual({ A: 1 });
    await expect(rpc.call("Node.UpdateAlloc", {}, "n")).resolves.toEqual({ B: 2 });
    await expect(rpc.call("Node.UpdateAlloc", {}, "n")).resolves.toEqual({ C: 3 });
  });

  it("sends a call once more when the kept connection it went out on was closed by the server", async () => {
    // The second request finds its connection closed (the server's keep-alive timeout, racing the call).
    const { srv, rpc, counters } = await setup((i) => (i === 1 ? null : ok(`{"N":${i}}`)));
    await expect(rpc.call("Node.UpdateAlloc", {}, "n")).resolves.toEqual({ N: 0 });
    await expect(rpc.call("Node.UpdateAlloc", {}, "n")).resolves.toEqual({ N: 2 });
    expect(srv.received.map((r) => r.text)).toEqual(Array(3).fill(srv.received[0]!.text));
    expect(srv.received[2]!.port).not.toBe(srv.received[1]!.port);
    expect(counters.snapshot().errors_by_reason).toEqual({});
  });

  it("fails a call the server closes on twice as ECONNRESET, as Node's client did, after sending it once more", async () => {
    const { srv, rpc, counters } = await setup(() => null);
    await expect(rpc.call("Node.UpdateAlloc", {}, "n")).rejects.toThrow("Node.UpdateAlloc: ECONNRESET");
    expect(srv.received).toHaveLength(2);
    expect(counters.snapshot().errors_by_reason).toEqual({ "Node.UpdateAlloc ECONNRESET": 1 });
  });

  it("fails a call to a server that is not there as ECONNREFUSED, and reconnects once it is", async () => {
    const srv = await rawServer(() => ok("{}"));
    srv.close();
    const counters = new Counters();
    const rpc = new RpcClient(srv.url, counters, options);
    cleanups.push(() => rpc.close());
    await expect(rpc.call("Node.UpdateStatus", {}, "n")).rejects.toThrow("Node.UpdateStatus: ECONNREFUSED");
    expect(counters.snapshot().errors_by_reason).toEqual({ "Node.UpdateStatus ECONNREFUSED": 1 });
  });

  it("keeps the short calls within their pool's bound, the others waiting their turn", async () => {
    const srv = await rawServer(() => undefined);
    cleanups.push(srv.close);
    const rpc = new RpcClient(srv.url, new Counters(), { ...options, shortSockets: 1 });
    cleanups.push(() => rpc.close());
    const a = rpc.call("Node.Deregister", {}, "x").catch(() => "failed");
    const b = rpc.call("Node.Deregister", {}, "y").catch(() => "failed");
    await new Promise((r) => setTimeout(r, 200));
    expect(srv.received).toHaveLength(1);
    expect(srv.opened()).toBe(1);
    rpc.close();
    await Promise.all([a, b]);
  });

  it("gives calls that wait a connection each, and keeps only so many of them idle", async () => {
    const srv = await rawServer(() => undefined);
    cleanups.push(srv.close);
    const set = new ConnectionPerCall(srv.url, 2);
    cleanups.push(() => set.destroy());
    const exchange = {
      path: "/v1/rpc/CSIVolume.Unpublish",
      headers: [],
      body: "{}",
      signal: undefined,
      timeoutMs: 0,
    };
    const calls = Array.from({ length: 5 }, () => set.request(exchange));
    await new Promise((r) => setTimeout(r, 200));
    // All five out at once, on five connections.
    expect(srv.received).toHaveLength(5);
    expect(new Set(srv.received.map((r) => r.port)).size).toBe(5);
    for (const r of srv.received) r.socket.write(ok("{}"));
    await Promise.all(calls);
    await new Promise((r) => setTimeout(r, 200));
    // Two kept for the next calls, as the Agent's maxFreeSockets did; the next call takes one.
    expect(srv.open()).toBe(2);
    const next = set.request(exchange);
    await new Promise((r) => setTimeout(r, 100));
    expect(srv.opened()).toBe(5);
    srv.received[5]!.socket.write(ok("{}"));
    await next;
  });
});
