import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { ApiError } from "../../src/api/api-error.ts";
import { captureRawBody, FORWARDED_HEADER, forwardToLeader } from "../../src/api/forward-to-leader.ts";
import { loadConfig } from "../../src/config.ts";
import type { Leadership } from "../../src/leadership.ts";
import { eventually } from "../cluster/eventually.ts";

/** A leadership the test points wherever it likes. */
function pointingAt(leader: string, isLeader = false): Leadership {
  return {
    isLeader: () => isLeader,
    leader$: undefined as never,
    leaderAddress: () => leader,
    peers: () => [],
    lastContactMs: () => 0,
  };
}

/**
 * A server with two routes: an echo of what arrived (as msgpack-ish bytes,
 * to show the body is passed through untouched) and a slow read. A
 * follower forwards both to whatever its leadership names.
 */
async function server(name: string, leadership: () => Leadership): Promise<FastifyInstance> {
  // A caller that hung up mid-request leaves a kept-alive socket behind; close it at once.
  const app = Fastify({ forceCloseConnections: true });
  app.addContentTypeParser("application/msgpack", { parseAs: "buffer" }, (_r, body, done) =>
    done(null, body),
  );
  app.setErrorHandler((error: Error, _request, reply) => {
    const status = error instanceof ApiError ? error.status : 500;
    return reply.status(status).type("text/plain").send(error.message);
  });
  const config = await loadConfig(["--server-name", name], {});
  const ctx = {
    get leadership() {
      return leadership();
    },
    config,
  };
  app.post("/v1/rpc/:method", { preParsing: captureRawBody }, async (request, reply) => {
    if (!ctx.leadership.isLeader()) return forwardToLeader(ctx, request, reply);
    reply.header("X-Nomad-Index", "42").status(201);
    return {
      served: name,
      method: request.method,
      url: request.url,
      forwardedBy: request.headers[FORWARDED_HEADER],
      token: request.headers["x-nomad-token"],
      type: request.headers["content-type"],
      body: (request.body as Buffer).toString("hex"),
    };
  });
  app.get("/v1/hang", async (request, reply) => {
    if (!ctx.leadership.isLeader()) return forwardToLeader(ctx, request, reply);
    // A blocking query that never fires: answers only when the caller leaves.
    arrived.push(name);
    await new Promise<void>((resolve) => request.raw.socket.once("close", () => resolve()));
    hungUp.push(name);
    return reply.send("gone");
  });
  app.get("/v1/slow", async (request, reply) => {
    if (!ctx.leadership.isLeader()) return forwardToLeader(ctx, request, reply);
    await new Promise((resolve) => setTimeout(resolve, 200));
    return reply.type("text/plain").send(`slow from ${name}`);
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  return app;
}

/** Servers whose /v1/hang was called, and whose /v1/hang saw its caller leave. */
const arrived: string[] = [];
const hungUp: string[] = [];

const addressOf = (app: FastifyInstance) => {
  const a = app.server.address() as { port: number };
  return `127.0.0.1:${a.port}`;
};

describe("forwardToLeader", () => {
  const apps: FastifyInstance[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  it("sends method, path, query, headers and body to the leader, and relays its answer", async () => {
    const leader = await server("leader", () => pointingAt("", true));
    apps.push(leader);
    const follower = await server("follower", () => pointingAt(addressOf(leader)));
    apps.push(follower);
    const bytes = Buffer.from([0x82, 0xa2, 0x49, 0x44, 0xc0, 0xff, 0x00, 0x01]);
    const res = await fetch(`http://${addressOf(follower)}/v1/rpc/Node.UpdateStatus?region=global&stale=`, {
      method: "POST",
      headers: { "content-type": "application/msgpack", "x-nomad-token": "s3cret" },
      body: bytes,
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("x-nomad-index")).toBe("42");
    expect(await res.json()).toEqual({
      served: "leader",
      method: "POST",
      url: "/v1/rpc/Node.UpdateStatus?region=global&stale=",
      forwardedBy: "follower",
      token: "s3cret",
      type: "application/msgpack",
      body: bytes.toString("hex"),
    });
    const slow = await fetch(`http://${addressOf(follower)}/v1/slow`);
    expect(await slow.text()).toBe("slow from leader");
  });

  it("abandons the leader's side of a request whose caller hangs up", async () => {
    const leader = await server("leader", () => pointingAt("", true));
    apps.push(leader);
    const follower = await server("follower", () => pointingAt(addressOf(leader)));
    apps.push(follower);
    const caller = new AbortController();
    const pending = fetch(`http://${addressOf(follower)}/v1/hang`, { signal: caller.signal }).catch(
      () => "aborted",
    );
    await eventually(() => expect(arrived).toContain("leader"), 10_000);
    caller.abort();
    expect(await pending).toBe("aborted");
    await eventually(() => expect(hungUp).toContain("leader"), 10_000);
  });

  it("answers No cluster leader when none is known, when it is unreachable, and instead of forwarding twice", async () => {
    const lost = await server("lost", () => pointingAt(""));
    apps.push(lost);
    const post = (app: FastifyInstance) =>
      fetch(`http://${addressOf(app)}/v1/rpc/Node.UpdateStatus`, {
        method: "POST",
        headers: { "content-type": "application/msgpack" },
        body: Buffer.from([1]),
      });
    let res = await post(lost);
    expect(res.status).toBe(500);
    expect(await res.text()).toBe("No cluster leader");

    const stranded = await server("stranded", () => pointingAt("127.0.0.1:1"));
    apps.push(stranded);
    res = await post(stranded);
    expect(res.status).toBe(500);
    expect(await res.text()).toMatch(/^No cluster leader: cannot reach the leader at 127\.0\.0\.1:1/);

    // Two followers that each think the other leads.
    let a: FastifyInstance | undefined;
    const b = await server("b", () => pointingAt(addressOf(a!)));
    apps.push(b);
    a = await server("a", () => pointingAt(addressOf(b)));
    apps.push(a);
    res = await post(a);
    expect(res.status).toBe(500);
    expect(await res.text()).toBe(
      "No cluster leader: a forwarded this request, but this server does not lead",
    );
  });

  it("holds a request while no leader is known or the named one refuses connections, then forwards it", async () => {
    const leader = await server("leader", () => pointingAt("", true));
    apps.push(leader);
    let named = "";
    const follower = await server("follower", () => pointingAt(named));
    apps.push(follower);
    const answer = fetch(`http://${addressOf(follower)}/v1/rpc/Node.UpdateStatus`, {
      method: "POST",
      headers: { "content-type": "application/msgpack" },
      body: Buffer.from([7]),
    });
    await new Promise((r) => setTimeout(r, 300));
    // A leader that has just gone: nothing listens there.
    named = "127.0.0.1:1";
    await new Promise((r) => setTimeout(r, 300));
    named = addressOf(leader);
    const res = await answer;
    expect(res.status).toBe(201);
    expect(((await res.json()) as { served: string }).served).toBe("leader");
  });
});
