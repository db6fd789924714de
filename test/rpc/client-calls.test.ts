import { connect, createServer, type Server, type Socket } from "node:net";
import type { FastifyReply, FastifyRequest } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { FORWARDED_HEADER } from "../../src/api/forward-to-leader.ts";
import { NO_NODE_PATH, NO_NODE_PATH_HEADER } from "../../src/api/forward-to-peers.ts";
import { SoleLeadership } from "../../src/leadership.ts";
import { nodeRpc, nodeStreamingRpc, sessionOrForward } from "../../src/rpc/client-calls.ts";
import { encodeGo } from "../../src/rpc/go-msgpack.ts";
import { GoValueReader } from "../../src/rpc/go-value-reader.ts";
import { RpcRemoteError } from "../../src/rpc/msgpack-rpc.ts";
import { NodeSessions } from "../../src/rpc/node-sessions.ts";
import { streamFrameOf } from "../../src/rpc/stream-frames.ts";
import { YamuxSession } from "../../src/rpc/yamux/session.ts";
import { FakeClientPeer } from "./fake-client-peer.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A server-side session (what chronomad holds) joined over TCP to a fake agent's client-side one. */
async function pair(peer: FakeClientPeer): Promise<YamuxSession> {
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const accepted = new Promise<YamuxSession>((resolve) => {
    server.once("connection", (socket: Socket) =>
      resolve(YamuxSession.server(socket, { onStream: () => {} })),
    );
  });
  const address = server.address() as { port: number };
  const socket = connect({ host: "127.0.0.1", port: address.port });
  await new Promise((r) => socket.once("connect", r));
  peer.attach(socket);
  const session = await accepted;
  cleanups.push(() => {
    peer.close();
    session.close();
    server.close();
  });
  return session;
}

describe("nodeRpc", () => {
  it("makes one net/rpc call on a new stream and returns the agent's reply", async () => {
    const peer = new FakeClientPeer({
      rpc: { "FileSystem.List": (args) => ({ Files: [{ Name: String(args.Path), IsDir: true }] }) },
    });
    const session = await pair(peer);
    const reply = await nodeRpc(session, "FileSystem.List", { AllocID: "a1", Path: "/alloc" });
    expect(reply).toMatchObject({ Files: [{ Name: "/alloc", IsDir: true }] });
    expect(peer.calls).toEqual([{ method: "FileSystem.List", args: { AllocID: "a1", Path: "/alloc" } }]);
    // The call's stream is closed once answered: nothing stays open on the session.
    await new Promise((r) => setTimeout(r, 20));
    expect(session.streamCount).toBe(0);
  });

  it("rejects with the agent's error text", async () => {
    const peer = new FakeClientPeer({
      rpc: {
        "Allocations.Restart": () => {
          throw new Error("Task not running");
        },
      },
    });
    const session = await pair(peer);
    const failed = nodeRpc(session, "Allocations.Restart", { AllocID: "a1" });
    await expect(failed).rejects.toBeInstanceOf(RpcRemoteError);
    await expect(failed).rejects.toThrow("Task not running");
  });

  it("rejects with Nomad's session open error when the session is gone", async () => {
    const session = await pair(new FakeClientPeer({}));
    session.close();
    await expect(nodeRpc(session, "ClientStats.Stats", {})).rejects.toThrow(/^session open: /);
  });
});

describe("nodeStreamingRpc", () => {
  it("opens a streaming RPC; the caller sends the arguments and reads StreamErrWrapper frames", async () => {
    const peer = new FakeClientPeer({
      streaming: {
        "FileSystem.Logs": async (args, agent) => {
          await agent.send(`hello ${String(args.Task)}\n`);
          await agent.send(Buffer.from([0, 1, 2, 255]));
          agent.fail("task not found", 404);
          agent.end();
        },
      },
    });
    const session = await pair(peer);
    const stream = await nodeStreamingRpc(session, "FileSystem.Logs");
    stream.write(encodeGo({ AllocID: "a1", Task: "web", PlainText: true }));
    const reader = new GoValueReader(stream);
    const frames = [];
    for (let v = await reader.next(); v !== undefined; v = await reader.next()) frames.push(streamFrameOf(v));
    expect(frames.map((f) => [f.payload.toString("hex"), f.error])).toEqual([
      [Buffer.from("hello web\n").toString("hex"), undefined],
      ["000102ff", undefined],
      ["", { message: "task not found", code: 404 }],
    ]);
    stream.end();
  });

  it("rejects with the ack's error for a method the agent does not have", async () => {
    const session = await pair(new FakeClientPeer({}));
    await expect(nodeStreamingRpc(session, "Agent.Nope")).rejects.toThrow('Unknown rpc method: "Agent.Nope"');
  });
});

describe("sessionOrForward", () => {
  const ctx = (sessions: NodeSessions) => ({
    nodeSessions: sessions,
    leadership: new SoleLeadership("s1"),
    config: { serverName: "s1" } as never,
  });

  it("gives this server's session to the node", async () => {
    const session = await pair(new FakeClientPeer({}));
    const sessions = new NodeSessions();
    sessions.record("n1", session);
    const got = await sessionOrForward(ctx(sessions), {} as FastifyRequest, {} as FastifyReply, "n1");
    expect(got).toBe(session);
  });

  it("answers a forwarded request it cannot serve with the marked 404, and a direct one with Nomad's 404", async () => {
    const sent: Record<string, unknown> = {};
    const reply = {
      status(s: number) {
        sent.status = s;
        return reply;
      },
      header(k: string, v: string) {
        sent[k] = v;
        return reply;
      },
      type: () => reply,
      send(body: string) {
        sent.body = body;
        return reply;
      },
    } as unknown as FastifyReply;
    const forwarded = { headers: { [FORWARDED_HEADER]: "s2" } } as unknown as FastifyRequest;
    expect(await sessionOrForward(ctx(new NodeSessions()), forwarded, reply, "n1")).toBeUndefined();
    expect(sent).toEqual({ status: 404, [NO_NODE_PATH_HEADER]: "1", body: NO_NODE_PATH });

    // A lone server has no one to ask.
    const direct = { headers: {} } as unknown as FastifyRequest;
    await expect(sessionOrForward(ctx(new NodeSessions()), direct, reply, "n1")).rejects.toMatchObject({
      status: 404,
      message: NO_NODE_PATH,
    });
  });
});
