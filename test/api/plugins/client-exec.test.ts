import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { startAclServer } from "../../acl/acl-fixtures.ts";
import type { FakeClientOptions } from "../../rpc/fake-client-peer.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { agentWithAlloc, callsOf } from "./client-agent-fixtures.ts";

const running: TestServer[] = [];
const agents: { close(): void }[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) a.close();
  for (const s of running.splice(0)) await s.stop();
});

const b64 = (s: string) => Buffer.from(s).toString("base64");
const command = encodeURIComponent(JSON.stringify(["/bin/sh"]));

/**
 * An agent whose exec echoes stdin back as stdout (as the driver's JSON
 * output messages), reports terminal sizes, and exits 0 once stdin closes;
 * task "gone" fails as the agent does for a task that is not running.
 */
const echoAgent: FakeClientOptions = {
  streaming: {
    "Allocations.Exec": async (args, agent) => {
      if (args.Task === "gone") {
        agent.fail('task "gone" is not running.', 404);
        agent.end();
        return;
      }
      await agent.send(JSON.stringify({ stdout: { data: b64("$ ") } }));
      for (;;) {
        const input = (await agent.next()) as
          | {
              Stdin?: { Data?: string | null; Close?: boolean } | null;
              TtySize?: { Height: number; Width: number } | null;
            }
          | undefined;
        if (input === undefined) break;
        if (input.TtySize)
          await agent.send(
            JSON.stringify({ stdout: { data: b64(`size ${input.TtySize.Width}x${input.TtySize.Height}`) } }),
          );
        if (input.Stdin?.Data) await agent.send(JSON.stringify({ stdout: { data: input.Stdin.Data } }));
        if (input.Stdin?.Close) {
          await agent.send(JSON.stringify({ exited: true, result: {} }));
          break;
        }
      }
      agent.end();
    },
  },
};

interface Session {
  readonly messages: unknown[];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly ws: WebSocket;
}

/** Opens the exec websocket as Nomad's Go client does; collects text messages as JSON and the close. */
async function open(s: TestServer, path: string, headers: Record<string, string> = {}): Promise<Session> {
  const ws = new WebSocket(`${s.url.replace("http", "ws")}${path}`, { headers });
  const messages: unknown[] = [];
  ws.on("message", (data) => messages.push(JSON.parse(String(data))));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on("close", (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  return { ws, messages, closed };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
}

describe("GET /v1/client/allocation/:id/exec over a session to the agent", () => {
  it("bridges stdin, terminal sizes and output, and closes normally when the command exits", async () => {
    const s = await startTestServer();
    running.push(s);
    const { agent, alloc } = await agentWithAlloc(s, echoAgent);
    agents.push(agent);
    const session = await open(
      s,
      `/v1/client/allocation/${alloc.ID}/exec?task=web&command=${command}&tty=true`,
    );
    await until(() => session.messages.length >= 1);
    session.ws.send(JSON.stringify({ tty_size: { height: 40, width: 120 } }));
    session.ws.send(JSON.stringify({ stdin: { data: b64("echo hi\n") } }));
    session.ws.send(JSON.stringify({ Stdin: { Close: true } }));
    expect(await session.closed).toEqual({ code: 1000, reason: "" });
    expect(session.messages).toEqual([
      { stdout: { data: b64("$ ") } },
      { stdout: { data: b64("size 120x40") } },
      { stdout: { data: b64("echo hi\n") } },
      { exited: true, result: {} },
    ]);
    expect(callsOf(agent, "Allocations.Exec")[0]).toMatchObject({
      AllocID: alloc.ID,
      Task: "web",
      Tty: true,
      Cmd: ["/bin/sh"],
    });
  });

  it("closes with the agent's error: 1008 for the code it gives, with its text", async () => {
    const s = await startTestServer();
    running.push(s);
    const { agent, alloc } = await agentWithAlloc(s, echoAgent);
    agents.push(agent);
    const session = await open(s, `/v1/client/allocation/${alloc.ID}/exec?task=gone&command=${command}`);
    expect(await session.closed).toEqual({ code: 1008, reason: 'task "gone" is not running.' });
  });

  it("stops passing input on a message that is not an exec request, while output goes on", async () => {
    const s = await startTestServer();
    running.push(s);
    const { agent, alloc } = await agentWithAlloc(s, echoAgent);
    agents.push(agent);
    const session = await open(s, `/v1/client/allocation/${alloc.ID}/exec?task=web&command=${command}`);
    await until(() => session.messages.length >= 1);
    session.ws.send("not json");
    session.ws.send(JSON.stringify({ stdin: { data: b64("ignored") } }));
    await new Promise((r) => setTimeout(r, 100));
    expect(session.messages).toEqual([{ stdout: { data: b64("$ ") } }]);
    session.ws.close();
    await session.closed;
  });

  it("takes the token from the ws_handshake message, and refuses what the token may not do with 1011", async () => {
    const acl = await startAclServer();
    running.push(acl.s);
    const { agent, alloc } = await agentWithAlloc(acl.s, echoAgent);
    agents.push(agent);
    await acl.policy("exec", `namespace "default" { capabilities = ["alloc-exec"] }`);
    await acl.policy("read", `namespace "default" { capabilities = ["read-job"] }`);
    const exec = await acl.token(["exec"]);
    const read = await acl.token(["read"]);
    const path = `/v1/client/allocation/${alloc.ID}/exec?task=web&command=${command}&ws_handshake=true`;

    const allowed = await open(acl.s, path);
    allowed.ws.send(JSON.stringify({ version: 1, auth_token: exec.SecretID }));
    await until(() => allowed.messages.length >= 1);
    expect(allowed.messages).toEqual([{ stdout: { data: b64("$ ") } }]);
    expect(callsOf(agent, "Allocations.Exec")[0]).toMatchObject({ AuthToken: exec.SecretID });
    allowed.ws.close();
    await allowed.closed;

    const refused = await open(acl.s, path);
    refused.ws.send(JSON.stringify({ version: 1, auth_token: read.SecretID }));
    expect(await refused.closed).toEqual({ code: 1011, reason: "Permission denied" });

    const badVersion = await open(acl.s, path);
    badVersion.ws.send(JSON.stringify({ version: 2, auth_token: exec.SecretID }));
    expect(await badVersion.closed).toEqual({ code: 1008, reason: "unexpected handshake value: 2" });

    // Without a handshake, the header's token.
    const header = await open(acl.s, `/v1/client/allocation/${alloc.ID}/exec?task=web&command=${command}`, {
      "X-Nomad-Token": exec.SecretID,
    });
    await until(() => header.messages.length >= 1);
    expect(header.messages).toHaveLength(1);
    header.ws.close();
    await header.closed;
  });

  it("answers a plain HTTP request for a reachable allocation as Nomad's failed upgrade", async () => {
    const s = await startTestServer();
    running.push(s);
    const { agent, alloc } = await agentWithAlloc(s, echoAgent);
    agents.push(agent);
    const res = await s.call(`/v1/client/allocation/${alloc.ID}/exec?task=web&command=${command}`);
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/^failed to upgrade connection: websocket: the client is not using/);
  });
});
