import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import type { ServerMember } from "../../../src/leadership.ts";
import type { FakeClientOptions } from "../../rpc/fake-client-peer.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { placeAlloc, TestNode } from "../node-fixtures.ts";
import { agentWithAlloc, callsOf } from "./client-agent-fixtures.ts";

const running: TestServer[] = [];
const agents: { close(): void }[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) a.close();
  for (const s of running.splice(0)) await s.stop();
});

const agentCalls: FakeClientOptions = {
  rpc: { "FileSystem.List": () => ({ Files: [{ Name: "alloc", IsDir: true }] }) },
  streaming: {
    "FileSystem.Logs": async (_args, agent) => {
      await agent.send("one\n");
      await agent.send("two\n");
      agent.end();
    },
    "Allocations.Exec": async (_args, agent) => {
      await agent.send(JSON.stringify({ stdout: { data: Buffer.from("$ ").toString("base64") } }));
      const input = (await agent.next()) as { Stdin?: { Data?: string } } | undefined;
      await agent.send(JSON.stringify({ stdout: { data: input?.Stdin?.Data ?? "" } }));
      agent.fail('task "web" exited', 400);
      agent.end();
    },
  },
};

/**
 * Two servers that know each other as peers (`a` asks `b`), each with its
 * own log holding the same node and allocation; the agent's session is
 * with `b` only, as when a client agent is connected to another server of
 * a log-backed cluster.
 */
async function twoServers(peers?: (a: TestServer, b: TestServer) => ServerMember[]) {
  const a = await startTestServer();
  const b = await startTestServer();
  running.push(a, b);
  const { agent, alloc } = await agentWithAlloc(b, agentCalls);
  agents.push(agent);
  const node = new TestNode(a, { id: agent.id, secret: agent.secret });
  expect((await node.register({ Attributes: { "nomad.version": "1.6.1" } })).status).toBe(200);
  expect((await node.heartbeat()).status).toBe(200);
  await placeAlloc(a, { ID: alloc.ID, NodeID: agent.id });
  const members = peers?.(a, b) ?? [
    { name: "a", address: a.address, leader: true, self: true },
    { name: "b", address: b.address, leader: false, self: false },
  ];
  (a.leadership as { members: () => readonly ServerMember[] }).members = () => members;
  return { a, b, agent, alloc };
}

describe("a client agent connected to another server", () => {
  it("is reached through the server that holds its session: unary calls and streams", async () => {
    const { a, agent, alloc } = await twoServers();
    const ls = await a.call(`/v1/client/fs/ls/${alloc.ID}`, { headers: { "X-Nomad-Token": "tok" } });
    expect([ls.status, await ls.json()]).toEqual([200, [{ Name: "alloc", IsDir: true }]]);
    expect(callsOf(agent, "FileSystem.List")[0]).toMatchObject({ AuthToken: "tok" });

    const logs = await a.call(`/v1/client/fs/logs/${alloc.ID}?task=web&type=stdout&plain=true`);
    expect([logs.status, logs.headers.get("content-type"), await logs.text()]).toEqual([
      200,
      "text/plain",
      "one\ntwo\n",
    ]);
  });

  it("is reached for exec: the two websockets are joined, the close frame relayed", async () => {
    const { a, alloc } = await twoServers();
    const ws = new WebSocket(
      `${a.url.replace("http", "ws")}/v1/client/allocation/${alloc.ID}/exec?task=web&command=${encodeURIComponent('["sh"]')}`,
    );
    const messages: unknown[] = [];
    ws.on("message", (d) => messages.push(JSON.parse(String(d))));
    const closed = new Promise<[number, string]>((r) =>
      ws.on("close", (code, reason) => r([code, String(reason)])),
    );
    await new Promise((r) => ws.once("open", r));
    ws.send(JSON.stringify({ stdin: { data: Buffer.from("ls\n").toString("base64") } }));
    expect(await closed).toEqual([1008, 'task "web" exited']);
    expect(messages).toEqual([
      { stdout: { data: Buffer.from("$ ").toString("base64") } },
      { stdout: { data: Buffer.from("ls\n").toString("base64") } },
    ]);
  });

  it("answers Nomad's 404 when no server holds a session, and a 500 naming a server it could not ask", async () => {
    const { a, b, alloc } = await twoServers();
    // b holds no session to a node of a's own: b says so, a has no one else to ask.
    const other = new TestNode(a, {});
    await other.register({ Attributes: { "nomad.version": "1.6.1" } });
    await other.heartbeat();
    const lonely = await placeAlloc(a, { NodeID: other.id });
    const otherOnB = new TestNode(b, { id: other.id, secret: other.secret });
    await otherOnB.register({ Attributes: { "nomad.version": "1.6.1" } });
    await otherOnB.heartbeat();
    await placeAlloc(b, { ID: lonely.ID, NodeID: other.id });
    const noPath = await a.call(`/v1/client/fs/ls/${lonely.ID}`);
    expect([noPath.status, await noPath.text()]).toEqual([404, "No path to node"]);

    (a.leadership as { members: () => readonly ServerMember[] }).members = () => [
      { name: "a", address: a.address, leader: true, self: true },
      { name: "gone", address: "127.0.0.1:1", leader: false, self: false },
    ];
    const unreachable = await a.call(`/v1/client/fs/ls/${alloc.ID}`);
    expect(unreachable.status).toBe(500);
    expect(await unreachable.text()).toMatch(
      /^1 error occurred:\n\t\* failed querying server "127\.0\.0\.1:1": .*ECONNREFUSED/,
    );
  });
});
