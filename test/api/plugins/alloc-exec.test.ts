import { createHash, randomBytes, randomUUID } from "node:crypto";
import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { placeAlloc, TestNode } from "../node-fixtures.ts";

const running: TestServer[] = [];
async function start() {
  const s = await startTestServer();
  running.push(s);
  return s;
}
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

interface WebSocketClose {
  status: number;
  code?: number;
  reason?: string;
}

/** Opens `path` as a websocket (as Nomad's Go client does) and reads the first frame, which must be a close. */
function openWebSocket(s: TestServer, path: string): Promise<WebSocketClose> {
  const key = randomBytes(16).toString("base64");
  return new Promise((resolve, reject) => {
    const req = request(`${s.url}${path}`, {
      headers: {
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": key,
      },
    });
    req.on("upgrade", (res, socket, head) => {
      // Go's websocket client checks the server read its key (RFC 6455).
      const accept = createHash("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
      if (res.headers["sec-websocket-accept"] !== accept) reject(new Error("wrong Sec-WebSocket-Accept"));
      let bytes = head;
      const done = () => {
        socket.destroy();
        const opcode = bytes[0]! & 0x0f;
        if (opcode !== 8) return reject(new Error(`first frame has opcode ${opcode}`));
        const length = bytes[1]! & 0x7f;
        const payload = bytes.subarray(2, 2 + length);
        resolve({
          status: res.statusCode ?? 0,
          code: payload.readUInt16BE(0),
          reason: payload.subarray(2).toString("utf8"),
        });
      };
      socket.on("data", (d: Buffer) => {
        bytes = Buffer.concat([bytes, d]);
      });
      socket.on("end", done);
    });
    req.on("response", (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0 });
    });
    req.on("error", reject);
    req.end();
  });
}

const command = encodeURIComponent(JSON.stringify(["/bin/sh"]));

describe("GET /v1/client/allocation/:id/exec", () => {
  it("closes the websocket with Nomad's Unknown allocation error for an unknown ID", async () => {
    const s = await start();
    const id = randomUUID();
    const closed = await openWebSocket(
      s,
      `/v1/client/allocation/${id}/exec?task=web&command=${command}&tty=false`,
    );
    // 101, then a close frame: 1008 is the websocket code Nomad gives a 404.
    expect(closed).toEqual({ status: 101, code: 1008, reason: `Unknown allocation "${id}"` });
  });

  it("answers a plain HTTP request with the 404 itself, and a known allocation with no path to its node", async () => {
    const s = await start();
    const id = randomUUID();
    const plain = await s.call(`/v1/client/allocation/${id}/exec?task=web&command=${command}`);
    expect(plain.status).toBe(404);
    expect(await plain.text()).toBe(`Unknown allocation "${id}"`);

    const node = new TestNode(s);
    expect((await node.register()).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    const alloc = await placeAlloc(s, { NodeID: node.id });
    const closed = await openWebSocket(
      s,
      `/v1/client/allocation/${alloc.ID}/exec?task=web&command=${command}`,
    );
    expect(closed).toEqual({ status: 101, code: 1008, reason: "No path to node" });

    const bad = await s.call(`/v1/client/allocation/${id}/exec?task=web&command=${command}&tty=maybe`);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/^Failed to parse value of "tty"/);
  });
});
