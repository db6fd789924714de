import { Agent, createServer, request } from "node:http";
import { type AddressInfo, createServer as createTcpServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { KeepAliveConnection } from "../../src/bench/registration-connection.ts";

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** A TCP server that records the bytes of the first request on each connection and answers with `reply`. */
async function recorder(reply: string): Promise<{ url: URL; seen: Promise<string> }> {
  let seen!: (s: string) => void;
  const seenP = new Promise<string>((r) => {
    seen = r;
  });
  const sockets: Socket[] = [];
  const server = createTcpServer((s) => {
    sockets.push(s);
    s.once("data", (d) => {
      seen(d.toString("latin1"));
      s.write(reply);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closers.push(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), seen: seenP };
}

describe("the registration benchmark's keep-alive connection", () => {
  it("sends the bytes Node's http client sends for the same request", async () => {
    const body = JSON.stringify({ Job: { ID: "é" } });
    const ok = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
    const raw = await recorder(ok);
    const c = new KeepAliveConnection(raw.url);
    await c.send("PUT", "/v1/jobs", body);
    c.close();
    const viaNode = await recorder(ok);
    const agent = new Agent({ keepAlive: true });
    await new Promise<void>((resolve) => {
      const req = request(
        {
          agent,
          host: viaNode.url.hostname,
          port: viaNode.url.port,
          method: "PUT",
          path: "/v1/jobs",
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on("end", resolve);
        },
      );
      req.end(body);
    });
    agent.destroy();
    const [a, b] = [await raw.seen, await viaNode.seen];
    expect(a).toContain(`Host: ${raw.url.host}\r\n`);
    // The two servers differ in their port only.
    expect(a.replace(raw.url.host, "HOST")).toBe(b.replace(viaNode.url.host, "HOST"));
  });

  it("reads answers by length and chunked, keeps the connection, and reconnects after a close", async () => {
    const connections: number[] = [];
    let n = 0;
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => {
        body += d;
      });
      req.on("end", () => {
        n++;
        if (n === 2) {
          // Chunked: written in parts with no length.
          res.write(`{"part":1,`);
          res.end(`"echo":${body}}`);
        } else if (n === 3) {
          res.setHeader("connection", "close");
          res.end(JSON.stringify({ n, echo: JSON.parse(body) }));
        } else res.end(JSON.stringify({ n, echo: JSON.parse(body) }));
      });
    });
    server.on("connection", () => connections.push(n));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    closers.push(() => server.close());
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const c = new KeepAliveConnection(url);
    const answers = [];
    for (let i = 1; i <= 4; i++) answers.push(await c.send("PUT", "/v1/jobs", JSON.stringify({ i })));
    c.close();
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(JSON.parse(answers[0]!.text)).toEqual({ n: 1, echo: { i: 1 } });
    expect(JSON.parse(answers[1]!.text)).toEqual({ part: 1, echo: { i: 2 } });
    expect(JSON.parse(answers[2]!.text)).toEqual({ n: 3, echo: { i: 3 } });
    expect(JSON.parse(answers[3]!.text)).toEqual({ n: 4, echo: { i: 4 } });
    // One connection for the first three, a second after the server's close.
    expect(connections).toEqual([0, 3]);
  });

  it("answers status 0 when the server is gone", async () => {
    const raw = await recorder("");
    const port = raw.url.port;
    for (const close of closers.splice(0)) close();
    const c = new KeepAliveConnection(new URL(`http://127.0.0.1:${port}`));
    const a = await c.send("PUT", "/v1/jobs", "{}");
    expect(a.status).toBe(0);
    c.close();
  });
});
