import { Agent, request } from "node:http";
import { connect } from "node:net";

/**
 * One GET on a keep-alive connection that stays open afterwards, as Nomad's
 * Go client leaves its connections: resolves with the status once the
 * answer is read, the connection still idle in `agent`.
 */
export function keepAliveGet(agent: Agent, url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, method: "GET" }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/** An agent that keeps idle connections open far longer than any shutdown. */
export function lingeringAgent(): Agent {
  return new Agent({ keepAlive: true, keepAliveMsecs: 1_000, maxSockets: 4, timeout: 600_000 });
}

/** Reads `url` (an event stream) for `ms`, then aborts; returns the bytes read. */
export async function readStreamFor(url: string, ms: number): Promise<number> {
  const abort = new AbortController();
  const res = await fetch(url, { signal: abort.signal });
  const reader = res.body!.getReader();
  let bytes = 0;
  const stop = setTimeout(() => abort.abort(), ms);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.length;
    }
  } catch {
    // The abort ends the read; that is the point.
  } finally {
    clearTimeout(stop);
  }
  return bytes;
}

/**
 * A PUT whose body never finishes arriving: a request the server must
 * treat as in flight until its grace runs out. Resolves once the headers
 * and part of the body are sent; `close` ends the socket.
 */
export async function stalledUpload(url: string): Promise<{ close(): void }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  // The server cuts it after the grace: that is expected, not an error here.
  socket.on("error", () => undefined);
  // Node's server answers "100 Continue" once it has parsed the head: from
  // then on the request is in flight, not an idle connection a shutdown may
  // close at once.
  const inFlight = new Promise<void>((resolve) => {
    socket.on("data", (chunk: Buffer) => {
      if (chunk.toString("latin1").startsWith("HTTP/1.1 100")) resolve();
    });
  });
  socket.write(
    `PUT /v1/namespace/stalled HTTP/1.1\r\nHost: ${hostname}\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n`,
  );
  await inFlight;
  socket.write(`{"Descrip`);
  return { close: () => socket.destroy() };
}
