import { get, type IncomingMessage } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { LogTap } from "../../../src/logging/log-tap.ts";
import { FakeClientPeer } from "../../rpc/fake-client-peer.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { TestNode } from "../node-fixtures.ts";
import { callsOf } from "./client-agent-fixtures.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

/** A server whose own log goes nowhere (level silent) but can be monitored. */
async function start() {
  const tap = new LogTap("silent", { name: "chronomad" }, { write: () => undefined });
  const s = await startTestServer({ deps: { logger: tap.logger, logTap: tap } });
  running.push(s);
  return { s, tap };
}

/**
 * Opens the monitor with node:http rather than fetch: after an abort, fetch's
 * pool opens a spare connection that holds the server's shutdown for its
 * whole grace period.
 */
function openMonitor(s: TestServer, query: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    get(`${s.url}/v1/agent/monitor${query}`, { agent: false }, resolve).on("error", reject);
  });
}

/** Reads the monitor until `done` holds for what arrived, then hangs up. */
function readUntil(res: IncomingMessage, done: (text: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => {
      text += chunk;
      if (!done(text)) return;
      res.destroy();
      resolve(text);
    });
    res.on("error", reject);
    res.on("end", () => resolve(text));
  });
}

/** The complete lines of what arrived (a chunk may end inside one). */
const lines = (body: string) => body.split("\n").slice(0, -1);

/** The log text carried by Nomad's stream frames (heartbeat frames `{}` carry none). */
function framedText(body: string): string {
  return lines(body)
    .map((l) => JSON.parse(l) as { Data?: string; FileEvent?: string })
    .map((f) => (f.Data ? Buffer.from(f.Data, "base64").toString("utf8") : ""))
    .join("");
}

async function untilNoListener(tap: LogTap) {
  for (let i = 0; i < 200 && tap.listenerCount > 0; i++) await new Promise((r) => setTimeout(r, 5));
}

describe("GET /v1/agent/monitor", () => {
  it("streams the server's debug log in Nomad's frames while the server logs nothing itself", async () => {
    const { s, tap } = await start();
    const res = await openMonitor(s, "?log_level=debug");
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json");
    // A request made while monitoring shows in the log at debug level.
    const poke = setInterval(() => void s.call("/v1/agent/self").catch(() => undefined), 50);
    const body = await readUntil(res, (t) => framedText(t).includes("url=/v1/agent/self")).finally(() =>
      clearInterval(poke),
    );
    expect(framedText(body)).toMatch(
      /^\S+ \[DEBUG\] http: request: reqId=\S+ url=\/v1\/agent\/self status=200 /m,
    );
    expect(JSON.parse(lines(body)[0]!)).toMatchObject({ FileEvent: "log" });
    await untilNoListener(tap);
    expect(tap.listenerCount).toBe(0);
    expect(tap.logger.level).toBe("silent");
  });

  it("sends plain hclog JSON lines with plain=true and log_json=true", async () => {
    const { s } = await start();
    const res = await openMonitor(s, "?log_level=DEBUG&plain=true&log_json=1");
    expect(res.headers["content-type"]).toBe("text/plain");
    const poke = setInterval(() => void s.call("/v1/regions").catch(() => undefined), 50);
    const mentions = (t: string) => lines(t).find((l) => l.includes("/v1/regions"));
    const body = await readUntil(res, (t) => mentions(t) !== undefined).finally(() => clearInterval(poke));
    const line = mentions(body)!;
    expect(JSON.parse(line)).toMatchObject({ "@level": "debug", "@module": "http", url: "/v1/regions" });
  });

  it("refuses what Nomad refuses, in Nomad's words", async () => {
    const { s } = await start();
    const level = await s.call("/v1/agent/monitor?log_level=verbose");
    expect(level.status).toBe(400);
    expect(await level.text()).toBe("Unknown log level: verbose");
    const plain = await s.call("/v1/agent/monitor?plain=maybe");
    expect(plain.status).toBe(400);
    expect(await plain.text()).toBe(
      'Unknown option for plain: strconv.ParseBool: parsing "maybe": invalid syntax',
    );
    const both = await s.call("/v1/agent/monitor?node_id=a&server_id=b");
    expect(await both.text()).toBe("Cannot target node and server simultaneously");
    const node = await s.call("/v1/agent/monitor?node_id=abc");
    expect([node.status, await node.text()]).toEqual([400, 'Unknown node "abc"']);
    const server = await s.call("/v1/agent/monitor?server_id=nope.global");
    expect([server.status, await server.text()]).toEqual([500, "unknown Nomad server nope.global"]);
  });

  it("says so when the server's logger was supplied without a tap", async () => {
    const s = await startTestServer();
    running.push(s);
    const res = await s.call("/v1/agent/monitor");
    expect(res.status).toBe(501);
  });
});

describe("GET /v1/agent/monitor?node_id=", () => {
  const agents: FakeClientPeer[] = [];
  afterEach(() => {
    for (const a of agents.splice(0)) a.close();
  });

  const LINE = "2026-12-01T08:00:00.000Z [DEBUG] client: updated allocations: index=7 total=1\n";
  const frame = JSON.stringify({ Data: Buffer.from(LINE).toString("base64"), FileEvent: "log" });

  /** A server and a client agent connected to it whose Agent.Monitor sends a heartbeat and one line, then ends. */
  async function withAgent(attributes?: Record<string, string>) {
    const { s } = await start();
    const agent = new FakeClientPeer({
      streaming: {
        "Agent.Monitor": async (args, peer) => {
          if (args.PlainText) {
            await peer.send(""); // a heartbeat: nothing to write
            await peer.send(LINE);
          } else {
            await peer.send("{}");
            await peer.send(frame);
          }
          peer.end();
        },
      },
    });
    agents.push(agent);
    await agent.connect(s.rpcAddress, attributes);
    return { s, agent };
  }

  it("streams the client agent's own log from its Agent.Monitor, in its frames", async () => {
    const { s, agent } = await withAgent();
    const res = await s.call(`/v1/agent/monitor?node_id=${agent.id}&log_level=debug`, {
      headers: { "X-Nomad-Token": "tok" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.text()).toBe(`{}${frame}`);
    expect(callsOf(agent, "Agent.Monitor")[0]).toMatchObject({
      NodeID: agent.id,
      ServerID: "",
      LogLevel: "debug",
      LogJSON: false,
      PlainText: false,
      Region: "global",
      AuthToken: "tok",
    });
  });

  it("passes plain and log_json on, and answers plain text", async () => {
    const { s, agent } = await withAgent();
    const res = await s.call(`/v1/agent/monitor?node_id=${agent.id}&plain=true&log_json=1`);
    expect(res.headers.get("content-type")).toBe("text/plain");
    expect(await res.text()).toBe(LINE);
    expect(callsOf(agent, "Agent.Monitor")[0]).toMatchObject({
      LogLevel: "INFO",
      LogJSON: true,
      PlainText: true,
    });
  });

  it("makes Nomad's checks on the node: without a session, too old for RPC", async () => {
    const { s } = await start();
    // A node that registered over HTTP has no session to any server.
    const node = new TestNode(s, {});
    await node.register({ Attributes: { "nomad.version": "1.6.1" } });
    const noPath = await s.call(`/v1/agent/monitor?node_id=${node.id}`);
    expect([noPath.status, await noPath.text()]).toEqual([404, "No path to node"]);

    const old = new TestNode(s, {});
    await old.register({ Attributes: { "nomad.version": "0.7.1" } });
    const tooOld = await s.call(`/v1/agent/monitor?node_id=${old.id}`);
    expect([tooOld.status, await tooOld.text()]).toEqual([
      400,
      "Node does not support RPC; requires 0.8 or later",
    ]);
  });

  it("answers the agent's own refusal with its code", async () => {
    const { s } = await start();
    const agent = new FakeClientPeer({
      streaming: {
        "Agent.Monitor": (_args, peer) => {
          peer.fail("Permission denied", 403);
          peer.end();
        },
      },
    });
    agents.push(agent);
    await agent.connect(s.rpcAddress);
    const res = await s.call(`/v1/agent/monitor?node_id=${agent.id}`);
    expect([res.status, await res.text()]).toEqual([403, "Permission denied"]);
  });
});
