import type { IncomingMessage, ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import Fastify from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { admissionOf, admittingServerFactory, RequestAdmission } from "../../src/api/request-admission.ts";

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A response whose request has this URL: what the admission reads of them. */
function call(url: string): ServerResponse {
  return { req: { url } } as unknown as ServerResponse;
}

/** A budget whose quota stays `n` a turn, whatever the calls cost. */
const fixed = (n: number) => ({ ms: 8, minPerTurn: n, maxPerTurn: n });

describe("RequestAdmission", () => {
  it("starts requests at once while the turn's quota lasts, the rest on later turns, in order", async () => {
    const started: string[] = [];
    const admission = new RequestAdmission((req: IncomingMessage) => started.push(req.url ?? ""), fixed(2));
    for (let i = 0; i < 5; i++) admission.admit(call(`/v1/jobs?i=${i}`).req, call(`/v1/jobs?i=${i}`));
    expect(started).toEqual(["/v1/jobs?i=0", "/v1/jobs?i=1"]);
    expect(admission.waiting).toBe(3);
    await nextTurn();
    expect(started).toHaveLength(4);
    await nextTurn();
    expect(started).toEqual([0, 1, 2, 3, 4].map((i) => `/v1/jobs?i=${i}`));
    expect(admission.waiting).toBe(0);
  });

  it("handles a heartbeat at once, ahead of the requests waiting, whatever its query", () => {
    const started: string[] = [];
    const admission = new RequestAdmission((req: IncomingMessage) => started.push(req.url ?? ""), fixed(1));
    for (const url of ["/v1/rpc/Alloc.GetAllocs", "/v1/rpc/Node.UpdateAlloc"])
      admission.admit(call(url).req, call(url));
    for (const url of ["/v1/rpc/Node.UpdateStatus", "/v1/rpc/Node.UpdateStatus?region=global"]) {
      admission.admit(call(url).req, call(url));
    }
    // Only the exact method: a longer name is another call, and waits.
    admission.admit(call("/v1/rpc/Node.UpdateStatusX").req, call("/v1/rpc/Node.UpdateStatusX"));
    expect(started).toEqual([
      "/v1/rpc/Alloc.GetAllocs",
      "/v1/rpc/Node.UpdateStatus",
      "/v1/rpc/Node.UpdateStatus?region=global",
    ]);
    expect(admission.waiting).toBe(2);
  });

  it("admits the RPC port's calls in the same queue, a heartbeat at once", async () => {
    const started: string[] = [];
    const admission = new RequestAdmission((req: IncomingMessage) => started.push(req.url ?? ""), fixed(1));
    admission.admit(call("/v1/rpc/Alloc.GetAllocs").req, call("/v1/rpc/Alloc.GetAllocs"));
    admission.admit(call("/v1/rpc/Node.UpdateAlloc").req, call("/v1/rpc/Node.UpdateAlloc"));
    const rpc = admission.admitCall("Alloc.GetAllocs").then(() => started.push("rpc Alloc.GetAllocs"));
    await admission.admitCall("Node.UpdateStatus");
    started.push("rpc Node.UpdateStatus");
    await rpc;
    expect(started).toEqual([
      "/v1/rpc/Alloc.GetAllocs",
      "rpc Node.UpdateStatus",
      "/v1/rpc/Node.UpdateAlloc",
      "rpc Alloc.GetAllocs",
    ]);
  });
});

describe("admittingServerFactory", () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  it("gives the server fastify's own timeouts", async () => {
    const app = Fastify({ serverFactory: admittingServerFactory() });
    closers.push(() => app.close());
    await app.ready();
    expect(app.server.keepAliveTimeout).toBe(72_000);
    expect(app.server.requestTimeout).toBe(0);
    expect(app.server.timeout).toBe(0);
  });

  it("answers a heartbeat that arrived with a backlog of other calls before most of them", async () => {
    const app = Fastify({ serverFactory: admittingServerFactory() });
    const handled: string[] = [];
    app.put("/v1/rpc/:method", async (request) => {
      const method = (request.params as { method: string }).method;
      handled.push(method);
      // Each other call holds the loop a little, as an allocation pull does.
      if (method !== "Node.UpdateStatus") {
        const until = performance.now() + 1;
        while (performance.now() < until);
      }
      return {};
    });
    closers.push(() => app.close());
    await app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = app.server.address() as { port: number };

    // 40 calls and then a heartbeat, each on a connection of its own, all
    // written before the server's loop next reads its sockets: it finds them
    // ready together, the heartbeat last.
    const others = 40;
    // The server accepts one connection per turn of its loop: all of them
    // accepted first, or their requests would come one turn apart.
    let accepted = 0;
    app.server.on("connection", () => accepted++);
    const sockets = await Promise.all(
      Array.from({ length: others + 1 }, () => opened(connect(port, "127.0.0.1"))),
    );
    while (accepted < sockets.length) await nextTurn();
    closers.push(async () => {
      for (const s of sockets) s.destroy();
    });
    const answered = sockets.map((s) => firstResponse(s));
    sockets.forEach((s, i) => {
      s.write(putRequest(i < others ? "Alloc.GetAllocs" : "Node.UpdateStatus"));
    });
    await Promise.all(answered);

    expect(handled).toHaveLength(others + 1);
    // Without admission the heartbeat would be the 41st handled; with it, it
    // runs in the poll phase that read it, before the paced turns run theirs.
    const heartbeatAt = handled.indexOf("Node.UpdateStatus");
    expect(heartbeatAt).toBeLessThanOrEqual(32);
    expect(admissionOf(app.server)?.waiting).toBe(0);
  });
});

function opened(socket: Socket): Promise<Socket> {
  return new Promise((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}

function putRequest(method: string): string {
  return `PUT /v1/rpc/${method} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`;
}

function firstResponse(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      text += chunk;
      if (text.includes("\r\n\r\n")) resolve(text);
    });
    socket.once("error", reject);
  });
}
