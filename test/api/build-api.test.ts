import { Writable } from "node:stream";
import Fastify from "fastify";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../server-harness.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

describe("a path chronomad does not serve", () => {
  it("answers 404 saying so, with the method and path (never the query)", async () => {
    const s = await startTestServer();
    running.push(s);
    const res = await s.call("/v1/foo?token=secret");
    expect(res.status).toBe(404);
    expect(await res.text()).toBe("chronomad does not serve GET /v1/foo");
    const deep = await s.call("/v1/job/web/no-such-part", { method: "POST" });
    expect(deep.status).toBe(404);
    expect(await deep.text()).toBe("chronomad does not serve POST /v1/job/web/no-such-part");
    // A client agent's own route (its alloc snapshot, for migrations), which no server passes on.
    const client = await s.call("/v1/client/allocation/abc/snapshot");
    expect(client.status).toBe(404);
    expect(await client.text()).toBe("chronomad does not serve GET /v1/client/allocation/abc/snapshot");
  });
});

describe("request bodies", () => {
  it("parses JSON whatever the content type says, application/json or not", async () => {
    const s = await startTestServer();
    running.push(s);
    const body = JSON.stringify({ NodeID: "00000000-0000-0000-0000-000000000001", Status: "ready" });
    for (const type of ["application/json", "application/json; charset=utf-8", "text/plain", "x/y"]) {
      const ok = await s.call("/v1/rpc/Node.UpdateStatus", {
        method: "PUT",
        body,
        headers: { "content-type": type },
      });
      expect(ok.status, type).toBe(404);
      expect(await ok.text()).toBe("node not found");
      const bad = await s.call("/v1/rpc/Node.UpdateStatus", {
        method: "PUT",
        body: "{nope",
        headers: { "content-type": type },
      });
      expect(bad.status, type).toBe(400);
      expect(await bad.text()).toMatch(/^invalid JSON body: /);
    }
  });
});

describe("request loggers", () => {
  it("are made by fastify's own child factory (not checked per request), and log with the request id", async () => {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split("\n")) if (line !== "") lines.push(JSON.parse(line));
        done();
      },
    });
    const s = await startTestServer({ deps: { logger: pino({ level: "debug" }, stream) } });
    running.push(s);
    // fastify checks every request's logger made by any other factory (validateLogger).
    expect(s.http.childLoggerFactory).toBe(Fastify().childLoggerFactory);
    expect((await s.call("/v1/foo")).status).toBe(404);
    expect((await s.call("/v1/foo")).status).toBe(404);
    const requests = lines.filter((l) => l.msg === "request");
    expect(requests).toHaveLength(2);
    for (const line of requests) {
      expect(line).toMatchObject({ component: "http", url: "/v1/foo", status: 404 });
      expect(line.reqId).toEqual(expect.any(String));
    }
    expect(requests[0]!.reqId).not.toBe(requests[1]!.reqId);
  });
});
