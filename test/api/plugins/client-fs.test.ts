import { randomUUID } from "node:crypto";
import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { startAclServer } from "../../acl/acl-fixtures.ts";
import type { FakeClientOptions, StreamingPeer } from "../../rpc/fake-client-peer.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { placeAlloc, TestNode } from "../node-fixtures.ts";
import { agentWithAlloc, callsOf, sleep } from "./client-agent-fixtures.ts";

const running: TestServer[] = [];
const agents: { close(): void }[] = [];
async function start() {
  const s = await startTestServer();
  running.push(s);
  return s;
}
afterEach(async () => {
  for (const a of agents.splice(0)) a.close();
  for (const s of running.splice(0)) await s.stop();
});

async function withAgent(options: FakeClientOptions, attributes?: Record<string, string>) {
  const s = await start();
  const setup = await agentWithAlloc(s, options, attributes);
  agents.push(setup.agent);
  return { s, ...setup };
}

const MOD_TIME = "2026-11-26T14:43:50.599028684Z";
const files = [
  { Name: "alloc", IsDir: true, Size: 4096, FileMode: "drwxrwxrwx", ModTime: MOD_TIME, ContentType: "" },
  { Name: "web", IsDir: true, Size: 4096, FileMode: "drwxrwxrwx", ModTime: MOD_TIME, ContentType: "" },
];

/** An agent whose FileSystem.Stream sends `chunks` then ends, or fails with `error` first. */
function fileAgent(
  chunks: (string | Buffer)[],
  error?: { message: string; code?: number },
): FakeClientOptions {
  return {
    streaming: {
      "FileSystem.Stream": async (_args, agent: StreamingPeer) => {
        if (error) agent.fail(error.message, error.code);
        else for (const c of chunks) await agent.send(c);
        agent.end();
      },
    },
  };
}

describe("GET /v1/client/fs/ls/:id and stat/:id", () => {
  it("lists a directory through the agent's FileSystem.List, with Nomad's JSON", async () => {
    const { s, agent, alloc } = await withAgent({
      rpc: {
        "FileSystem.List": () => ({ Files: files, Index: 0, LastContact: 0, KnownLeader: false }),
        "FileSystem.Stat": () => ({ Info: { ...files[0], ContentType: "application/octet-stream" } }),
      },
    });
    const res = await s.call(`/v1/client/fs/ls/${alloc.ID}`, { headers: { "X-Nomad-Token": "tok" } });
    expect(res.status).toBe(200);
    // ContentType is omitempty in Nomad's JSON; ModTime went through Go's time binary and back.
    expect(await res.json()).toEqual(files.map(({ ContentType: _, ...f }) => f));
    expect(callsOf(agent, "FileSystem.List")).toEqual([
      expect.objectContaining({ AllocID: alloc.ID, Path: "/", AuthToken: "tok", AllowStale: true }),
    ]);

    const stat = await s.call(`/v1/client/fs/stat/${alloc.ID}?path=/alloc`);
    expect(await stat.json()).toEqual({ ...files[0], ContentType: "application/octet-stream" });
    expect(callsOf(agent, "FileSystem.Stat")[0]).toMatchObject({ Path: "/alloc" });

    const noPath = await s.call(`/v1/client/fs/stat/${alloc.ID}`);
    expect([noPath.status, await noPath.text()]).toEqual([400, "must provide a file name"]);
  });

  it("answers the agent's errors as Nomad's HTTP layer does: a missing file is a 404, others a 500", async () => {
    const { s, alloc } = await withAgent({
      rpc: {
        "FileSystem.List": (args) => {
          throw new Error(`open /tmp/alloc/${String(args.Path)}: no such file or directory`);
        },
        "FileSystem.Stat": () => {
          throw new Error("Permission denied");
        },
      },
    });
    const ls = await s.call(`/v1/client/fs/ls/${alloc.ID}?path=nope`);
    expect([ls.status, await ls.text()]).toEqual([404, "open /tmp/alloc/nope: no such file or directory"]);
    const stat = await s.call(`/v1/client/fs/stat/${alloc.ID}?path=x`);
    expect([stat.status, await stat.text()]).toEqual([403, "Permission denied"]);
  });

  it("makes the server's checks first: unknown allocation, node without a session, node too old", async () => {
    const s = await start();
    const id = randomUUID();
    const unknown = await s.call(`/v1/client/fs/ls/${id}`);
    expect([unknown.status, await unknown.text()]).toEqual([404, `Unknown allocation "${id}"`]);

    // A node that registered over HTTP has no session to any server.
    const node = new TestNode(s, {});
    await node.register({ Attributes: { "nomad.version": "1.6.1" } });
    await node.heartbeat();
    const placed = await placeAlloc(s, { NodeID: node.id });
    const noPath = await s.call(`/v1/client/fs/ls/${placed.ID}`);
    expect([noPath.status, await noPath.text()]).toEqual([404, "No path to node"]);

    const old = new TestNode(s, {});
    await old.register({ Attributes: { "nomad.version": "0.7.1" } });
    await old.heartbeat();
    const oldAlloc = await placeAlloc(s, { NodeID: old.id });
    const tooOld = await s.call(`/v1/client/fs/ls/${oldAlloc.ID}`);
    expect([tooOld.status, await tooOld.text()]).toEqual([
      500,
      "Node does not support RPC; requires 0.8 or later",
    ]);
    // The streaming calls code it 400.
    const logs = await s.call(`/v1/client/fs/logs/${oldAlloc.ID}?task=web&type=stdout`);
    expect([logs.status, await logs.text()]).toEqual([
      400,
      "Node does not support RPC; requires 0.8 or later",
    ]);
  });
});

describe("GET /v1/client/fs/cat/:id and readat/:id", () => {
  it("serves the file's bytes with Nomad's untrusted-content headers and a sniffed type", async () => {
    const { s, agent, alloc } = await withAgent(fileAgent(["line 0\n", "line 1\n"]));
    const res = await s.call(`/v1/client/fs/cat/${alloc.ID}?path=alloc/logs/web.stdout.0`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("line 0\nline 1\n");
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; sandbox",
    );
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(callsOf(agent, "FileSystem.Stream")[0]).toMatchObject({
      AllocID: alloc.ID,
      Path: "alloc/logs/web.stdout.0",
      Origin: "start",
      PlainText: true,
      Follow: false,
    });
  });

  it("never answers a page a browser would render: HTML is text/plain", async () => {
    const { s, alloc } = await withAgent(fileAgent(["<html><script>alert(1)</script></html>"]));
    const res = await s.call(`/v1/client/fs/cat/${alloc.ID}?path=index.html`);
    expect(res.headers.get("content-type")).toBe("text/plain");
    expect(await res.text()).toBe("<html><script>alert(1)</script></html>");
  });

  it("answers every error with 200 and the error's text, as Nomad's noxssrw writer does", async () => {
    const { s, alloc } = await withAgent(
      fileAgent([], { message: 'file "alloc" is a directory', code: 400 }),
    );
    const dir = await s.call(`/v1/client/fs/cat/${alloc.ID}?path=alloc`);
    expect([dir.status, await dir.text()]).toEqual([200, 'file "alloc" is a directory']);
    expect(dir.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    const noPath = await s.call(`/v1/client/fs/cat/${alloc.ID}`);
    expect([noPath.status, await noPath.text()]).toEqual([200, "must provide a file name"]);
    const badOffset = await s.call(`/v1/client/fs/readat/${alloc.ID}?path=x&offset=abc`);
    expect([badOffset.status, await badOffset.text()]).toEqual([
      200,
      'error parsing offset: strconv.ParseInt: parsing "abc": invalid syntax',
    ]);
    const id = randomUUID();
    const unknown = await s.call(`/v1/client/fs/cat/${id}?path=x`);
    expect([unknown.status, await unknown.text()]).toEqual([200, `Unknown allocation "${id}"`]);
  });

  it("passes readat's offset and limit", async () => {
    const { s, agent, alloc } = await withAgent(fileAgent(["ne 0\n"]));
    const res = await s.call(`/v1/client/fs/readat/${alloc.ID}?path=f&offset=2&limit=5`);
    expect(await res.text()).toBe("ne 0\n");
    expect(callsOf(agent, "FileSystem.Stream")[0]).toMatchObject({ Offset: 2, Limit: 5, Origin: "start" });
  });
});

describe("GET /v1/client/fs/logs/:id and stream/:id", () => {
  const logsAgent: FakeClientOptions = {
    streaming: {
      "FileSystem.Logs": async (args, agent) => {
        if (args.Task !== "web") {
          agent.fail(`unknown task name ${JSON.stringify(args.Task)}`, 400);
        } else if (args.PlainText) {
          await agent.send("line 0\n");
          await agent.send(""); // a heartbeat: nothing to write
          await agent.send("line 1\n");
        } else {
          await agent.send(JSON.stringify({ Data: Buffer.from("line 0\n").toString("base64"), Offset: 7 }));
        }
        agent.end();
      },
    },
  };

  it("streams the log: plain text, or the agent's JSON frames as they come", async () => {
    const { s, agent, alloc } = await withAgent(logsAgent);
    const plain = await s.call(
      `/v1/client/fs/logs/${alloc.ID}?task=web&type=stdout&plain=true&origin=end&offset=10`,
    );
    expect(plain.status).toBe(200);
    expect(plain.headers.get("content-type")).toBe("text/plain");
    expect(await plain.text()).toBe("line 0\nline 1\n");
    expect(callsOf(agent, "FileSystem.Logs")[0]).toMatchObject({
      AllocID: alloc.ID,
      Task: "web",
      LogType: "stdout",
      Offset: 10,
      Origin: "end",
      PlainText: true,
      Follow: false,
    });

    const framed = await s.call(`/v1/client/fs/logs/${alloc.ID}?task=web&type=stderr`);
    expect(framed.headers.get("content-type")).toBe("application/json");
    expect(await framed.json()).toEqual({ Data: Buffer.from("line 0\n").toString("base64"), Offset: 7 });
  });

  it("answers an error the agent sends first with its code, the logs' content type kept", async () => {
    const { s, alloc } = await withAgent(logsAgent);
    const res = await s.call(`/v1/client/fs/logs/${alloc.ID}?task=nope&type=stdout`);
    expect([res.status, await res.text()]).toEqual([400, 'unknown task name "nope"']);
    expect(res.headers.get("content-type")).toBe("application/json");
  });

  it("checks its parameters as Nomad does", async () => {
    const { s, alloc } = await withAgent(logsAgent);
    const cases: [string, number, string][] = [
      ["type=stdout", 400, "must provide task name"],
      ["task=web", 400, "must provide log type (stdout/stderr)"],
      [
        "task=web&type=stdout&follow=maybe",
        400,
        'failed to parse follow field to boolean: strconv.ParseBool: parsing "maybe": invalid syntax',
      ],
      ["task=web&type=stdout&origin=middle", 400, "origin must be start or end"],
      [
        "task=web&type=stdout&offset=x",
        400,
        'error parsing offset: strconv.ParseInt: parsing "x": invalid syntax',
      ],
    ];
    for (const [query, status, text] of cases) {
      const res = await s.call(`/v1/client/fs/logs/${alloc.ID}?${query}`);
      expect([query, res.status, await res.text()]).toEqual([query, status, text]);
    }
    const stream = await s.call(`/v1/client/fs/stream/${alloc.ID}?path=x&origin=middle`);
    expect([stream.status, await stream.text()]).toEqual([400, "origin must be start or end"]);
    // Nomad answers these 500; a malformed parameter is the caller's mistake, so chronomad says 400.
    for (const [query, text] of [
      ["path=x&offset=x", 'error parsing offset: strconv.ParseInt: parsing "x": invalid syntax'],
      [
        "path=x&follow=maybe",
        'failed to parse follow field to boolean: strconv.ParseBool: parsing "maybe": invalid syntax',
      ],
    ]) {
      const res = await s.call(`/v1/client/fs/stream/${alloc.ID}?${query}`);
      expect([query, res.status, await res.text()]).toEqual([query, 400, text]);
    }
  });

  it("appends an error that comes after output to the body, as Nomad's late error write does", async () => {
    const { s, alloc } = await withAgent({
      streaming: {
        "FileSystem.Stream": async (_args, agent) => {
          await agent.send('{"Offset":1}');
          agent.fail("file deleted: stream broke", 500);
          agent.end();
        },
      },
    });
    const res = await s.call(`/v1/client/fs/stream/${alloc.ID}?path=f`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('{"Offset":1}file deleted: stream broke');
  });

  it("follows with back-pressure: the agent is held back while the reader does not read, and released when it hangs up", async () => {
    let sent = 0;
    let ended: (() => void) | undefined;
    const agentDone = new Promise<void>((r) => {
      ended = r;
    });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const { s, alloc } = await withAgent({
      streaming: {
        "FileSystem.Stream": async (_args, agent) => {
          // As the agent's stream handler: the server closing its side (FIN) stops the stream.
          let closed = false;
          void agent.next().then(() => {
            closed = true;
          });
          try {
            for (let i = 0; i < 2000 && !closed; i++) {
              await agent.send(chunk);
              sent++;
            }
          } catch {
            // the server reset the stream
          }
          ended?.();
        },
      },
    });
    const url = new URL(`${s.url}/v1/client/fs/stream/${alloc.ID}?path=big&follow=true`);
    const res = await new Promise<import("node:http").IncomingMessage>((resolve, reject) => {
      const req = request(url, resolve);
      req.on("error", reject);
      req.end();
    });
    expect(res.statusCode).toBe(200);
    res.pause();
    await sleep(500);
    const whilePaused = sent;
    await sleep(300);
    // 2000 frames are 125 MiB: only what the windows and socket buffers hold got out.
    expect(sent).toBe(whilePaused);
    expect(sent).toBeLessThan(400);
    res.destroy();
    await agentDone;
    expect(sent).toBeLessThan(2000);
  });
});

describe("the read-fs and read-logs capabilities", () => {
  it("lets read-logs read logs only; the streaming refusal is Nomad's 500", async () => {
    const acl = await startAclServer();
    running.push(acl.s);
    const setup = await agentWithAlloc(acl.s, {
      rpc: { "FileSystem.List": () => ({ Files: [] }) },
      streaming: {
        "FileSystem.Logs": async (_args, agent) => {
          await agent.send("hi\n");
          agent.end();
        },
      },
    });
    agents.push(setup.agent);
    await acl.policy("logs", `namespace "default" { capabilities = ["read-logs"] }`);
    const token = await acl.token(["logs"]);
    const id = setup.alloc.ID;
    const logs = await acl.call(token.SecretID, `/v1/client/fs/logs/${id}?task=web&type=stdout&plain=true`);
    expect([logs.status, await logs.text()]).toEqual([200, "hi\n"]);
    expect(callsOf(setup.agent, "FileSystem.Logs")[0]).toMatchObject({ AuthToken: token.SecretID });
    const ls = await acl.call(token.SecretID, `/v1/client/fs/ls/${id}`);
    expect([ls.status, await ls.text()]).toEqual([403, "Permission denied"]);
    const stream = await acl.call(token.SecretID, `/v1/client/fs/stream/${id}?path=x`);
    expect([stream.status, await stream.text()]).toEqual([500, "Permission denied"]);
  });
});
