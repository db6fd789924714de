import { connect, type Socket } from "node:net";

export interface RawAnswer {
  /** 0 when the connection failed (text is then the error). */
  readonly status: number;
  readonly text: string;
}

const HEAD_END = Buffer.from("\r\n\r\n");

/**
 * One keep-alive HTTP/1.1 connection that sends one request at a time, for
 * the registration benchmark's client. It writes the bytes Node's http
 * client writes for the same request (the same headers, in the same order),
 * so the server sees what it saw before; but Node's client costs about
 * 200 µs of CPU a request in the benchmark's process (its agent, parser,
 * streams and events), and on a 2-core machine that is CPU the measured
 * server does not get. Answers are read by Content-Length or chunked
 * transfer coding; a `Connection: close` answer, or a failure, opens a new
 * connection for the next request, as the agent did.
 */
export class KeepAliveConnection {
  private socket: Socket | undefined;
  private readonly host: string;
  private readonly port: number;
  private readonly hostHeader: string;
  private chunks: Buffer[] = [];
  private pending: ((answer: RawAnswer, keepAlive: boolean) => void) | undefined;

  constructor(target: URL) {
    // URL keeps an IPv6 address in brackets; net.connect wants it bare.
    this.host = target.hostname.replace(/^\[(.*)\]$/, "$1");
    this.port = Number(target.port || 80);
    // What Node's client sends: the port only when it is not the default.
    this.hostHeader = target.host;
  }

  send(method: string, path: string, body: string): Promise<RawAnswer> {
    if (this.pending) return Promise.reject(new Error("one request at a time on a connection"));
    const socket = this.socket ?? this.open();
    const head =
      `${method} ${path} HTTP/1.1\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nHost: ${this.hostHeader}\r\nConnection: keep-alive\r\n\r\n`;
    return new Promise<RawAnswer>((resolve) => {
      this.pending = (answer, keepAlive) => {
        this.pending = undefined;
        if (!keepAlive) this.drop();
        resolve(answer);
      };
      socket.write(head + body);
    });
  }

  close(): void {
    this.drop();
  }

  private open(): Socket {
    const socket = connect({ host: this.host, port: this.port, noDelay: true });
    this.socket = socket;
    this.chunks = [];
    socket.on("data", (chunk: Buffer) => {
      this.chunks.push(chunk);
      this.answerIfComplete();
    });
    const fail = (message: string) => {
      if (this.socket !== socket) return;
      this.drop();
      this.pending?.({ status: 0, text: message }, false);
    };
    socket.on("error", (err) => fail(err.message));
    socket.on("close", () => fail("connection closed"));
    return socket;
  }

  private drop(): void {
    const socket = this.socket;
    this.socket = undefined;
    this.chunks = [];
    socket?.destroy();
  }

  private answerIfComplete(): void {
    if (!this.pending) return;
    const data = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    this.chunks = [data];
    const headEnd = data.indexOf(HEAD_END);
    if (headEnd < 0) return;
    const head = data.toString("latin1", 0, headEnd).split("\r\n");
    const status = Number(head[0]!.split(" ", 2)[1]);
    let length = -1;
    let chunked = false;
    let keepAlive = true;
    for (let i = 1; i < head.length; i++) {
      const line = head[i]!;
      const colon = line.indexOf(":");
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line
        .slice(colon + 1)
        .trim()
        .toLowerCase();
      if (name === "content-length") length = Number(value);
      else if (name === "transfer-encoding") chunked = value.includes("chunked");
      else if (name === "connection") keepAlive = value !== "close";
    }
    const bodyStart = headEnd + HEAD_END.length;
    let text: string;
    let end: number;
    if (chunked) {
      const decoded = dechunk(data, bodyStart);
      if (!decoded) return;
      ({ text, end } = decoded);
    } else {
      // Without a length (and not chunked) only a 1xx/204/304 has no body here.
      end = bodyStart + Math.max(0, length);
      if (data.length < end) return;
      text = data.toString("utf8", bodyStart, end);
    }
    this.chunks = end < data.length ? [data.subarray(end)] : [];
    this.pending(status ? { status, text } : { status: 0, text: `unreadable answer: ${head[0]}` }, keepAlive);
  }
}

/** A chunked body starting at `from`, or undefined while it is incomplete. */
function dechunk(data: Buffer, from: number): { text: string; end: number } | undefined {
  const parts: Buffer[] = [];
  let at = from;
  for (;;) {
    const lineEnd = data.indexOf("\r\n", at);
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(data.toString("latin1", at, lineEnd).split(";")[0]!, 16);
    const start = lineEnd + 2;
    if (size === 0) {
      // No trailers expected: the last chunk's line, then an empty line.
      const end = data.indexOf("\r\n", start);
      if (end < 0) return undefined;
      return { text: Buffer.concat(parts).toString("utf8"), end: end + 2 };
    }
    if (data.length < start + size + 2) return undefined;
    parts.push(data.subarray(start, start + size));
    at = start + size + 2;
  }
}
