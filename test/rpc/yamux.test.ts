import { execFile, spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Duplex } from "node:stream";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  encodeHeader,
  Flag,
  FrameDecoder,
  type FrameHeader,
  FrameType,
  STREAM_WINDOW,
} from "../../src/rpc/yamux/frame.ts";
import { type YamuxOptions, YamuxSession, type YamuxStream } from "../../src/rpc/yamux/session.ts";

/**
 * The yamux session against github.com/hashicorp/yamux v0.1.1 (the version Nomad
 * 1.6.1 pins), driven by the Go program in ./go-yamux acting as a Nomad client:
 * it dials, sends 0x06 and runs a yamux client session. Each Go-opened stream
 * starts with a tag byte that `serveTagged` below dispatches on.
 */

const moduleDir = join(dirname(fileURLToPath(import.meta.url)), "go-yamux");
const goVersion = spawnSync("go", ["version"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const hasGo = goVersion.error === undefined && goVersion.status === 0;
if (!hasGo) console.warn("yamux interop tests against hashicorp/yamux skipped: `go` is not on PATH");

// ---------------------------------------------------------------- helpers

function waitReadable(stream: Duplex): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      cleanup();
      resolve();
    };
    const fail = (err: Error) => {
      cleanup();
      reject(err);
    };
    const cleanup = () => {
      stream.off("readable", done);
      stream.off("end", done);
      stream.off("close", done);
      stream.off("error", fail);
    };
    stream.on("readable", done);
    stream.on("end", done);
    stream.on("close", done);
    stream.on("error", fail);
  });
}

/** Exactly `n` bytes, read chunk by chunk (read(n) beyond the window would wait forever, by design). */
async function readN(stream: Duplex, n: number, onChunk?: (chunk: Buffer) => void): Promise<Buffer> {
  const parts: Buffer[] = [];
  let have = 0;
  while (have < n) {
    const chunk = stream.read() as Buffer | null;
    if (chunk === null) {
      if (stream.readableEnded || stream.destroyed)
        throw new Error(`stream ended after ${have} of ${n} bytes`);
      await waitReadable(stream);
      continue;
    }
    let part = chunk;
    if (have + chunk.length > n) {
      part = chunk.subarray(0, n - have);
      stream.unshift(chunk.subarray(n - have));
    }
    have += part.length;
    if (onChunk) onChunk(part);
    else parts.push(part);
  }
  return Buffer.concat(parts);
}

/** Everything until the remote's FIN; does not touch our writable side. */
function collect(stream: Duplex): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => parts.push(chunk));
    stream.once("end", () => resolve(Buffer.concat(parts)));
    stream.once("error", reject);
  });
}

function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: Error }> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error: Error) => ({ ok: false as const, error }),
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

interface Harness {
  port: number;
  sessions: Array<{ session: YamuxSession; socket: Socket }>;
  close(): Promise<void>;
}

/** A TCP server that, like Nomad's RPC listener, expects byte 0x06 and then runs a yamux server session. */
function startServer(
  onStream: (stream: Duplex, session: YamuxSession, socket: Socket) => void,
  options: Partial<YamuxOptions> = {},
  onSession?: (session: YamuxSession, socket: Socket) => void,
  tap?: (chunk: Buffer) => void,
): Promise<Harness> {
  const sessions: Harness["sessions"] = [];
  const server: Server = createServer((socket) => {
    socket.on("error", () => {});
    socket.once("data", (first: Buffer) => {
      expect(first[0]).toBe(0x06);
      const head = first.subarray(1);
      if (tap) {
        tap(head);
        socket.on("data", tap);
      }
      const session: YamuxSession = YamuxSession.server(
        socket,
        { ...options, onStream: (stream) => onStream(stream, session, socket) },
        head,
      );
      sessions.push({ session, socket });
      onSession?.(session, socket);
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      if (address === null || typeof address === "string") throw new Error("no port");
      resolve({
        port: address.port,
        sessions,
        close: async () => {
          for (const { session } of sessions) session.close();
          await new Promise((r) => server.close(r));
        },
      });
    });
  });
}

async function readTag(stream: Duplex): Promise<string> {
  return (await readN(stream, 1)).toString("latin1");
}

// ---------------------------------------------------------------- interop with Go

describe.skipIf(!hasGo)(
  "yamux session against hashicorp/yamux v0.1.1 (Go client in test/rpc/go-yamux)",
  () => {
    let binDir: string;
    let binary: string;
    let harness: Harness | undefined;

    beforeAll(async () => {
      binDir = mkdtempSync(join(tmpdir(), "goyamux-"));
      binary = join(binDir, "goyamux");
      // The first run downloads github.com/hashicorp/yamux from the module proxy.
      await promisify(execFile)("go", ["build", "-mod=readonly", "-o", binary, "."], {
        cwd: moduleDir,
        timeout: 180_000,
      });
    }, 200_000);

    afterAll(() => {
      if (binDir) rmSync(binDir, { recursive: true, force: true });
    });

    afterEach(async () => {
      await harness?.close();
      harness = undefined;
    });

    function runGo(scenario: string, port: number): Promise<Record<string, unknown>> {
      return new Promise((resolve, reject) => {
        const child = spawn(binary, [scenario, `127.0.0.1:${port}`], { stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d: Buffer) => {
          stdout += d.toString();
        });
        child.stderr.on("data", (d: Buffer) => {
          stderr += d.toString();
        });
        const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
        child.on("close", (code) => {
          clearTimeout(timer);
          if (code !== 0) {
            reject(new Error(`goyamux ${scenario} exited ${code}:\n${stderr}`));
            return;
          }
          const last = stdout.trim().split("\n").pop() ?? "";
          // hashicorp/yamux logs protocol trouble ([ERR]) without always failing the call.
          if (/\[ERR\]/.test(stderr)) {
            reject(new Error(`goyamux ${scenario} logged errors:\n${stderr}`));
            return;
          }
          resolve({ ...(JSON.parse(last) as Record<string, unknown>), stderr });
        });
      });
    }

    /** Serves the Go-opened 'E' echo streams: 4-byte length, payload, echoed back followed by FIN. */
    async function serveEcho(stream: Duplex): Promise<void> {
      const size = (await readN(stream, 4)).readUInt32BE(0);
      const body = await readN(stream, size);
      stream.end(body);
      stream.resume(); // consume the client's FIN so the stream can finish
    }

    function tagged(
      handlers: Record<string, (stream: Duplex, session: YamuxSession, socket: Socket) => unknown>,
    ) {
      return (stream: Duplex, session: YamuxSession, socket: Socket) => {
        stream.on("error", () => {});
        void readTag(stream)
          .then((tag) => {
            if (tag === "E") return serveEcho(stream);
            const handler = handlers[tag];
            if (!handler) throw new Error(`no handler for tag ${tag}`);
            return handler(stream, session, socket);
          })
          .catch((err: Error) => console.warn(`tagged stream handler failed: ${err.message}`));
      };
    }

    it("carries many concurrent streams opened by the Go client (odd ids), each closed cleanly", async () => {
      const ids: number[] = [];
      const echo = tagged({});
      harness = await startServer((stream, session, socket) => {
        ids.push((stream as YamuxStream).id);
        echo(stream, session, socket);
      });
      const result = await runGo("echo", harness.port);
      expect(result.streams).toBe(200);
      expect(ids).toHaveLength(200);
      expect(ids.every((id) => id % 2 === 1)).toBe(true);
      await until(() => harness!.sessions[0]!.session.streamCount === 0, "streams to be released");
    }, 60_000);

    it("reassembles headers and payloads split arbitrarily across TCP writes", async () => {
      harness = await startServer(tagged({}));
      const result = await runGo("echo-split", harness.port);
      expect(result.streams).toBe(20);
      expect(result.stderr).not.toMatch(/\[ERR\]/);
    }, 60_000);

    it("moves 4 MiB each way on one stream with window updates and back-pressure on both sides", async () => {
      const observed: Record<string, unknown> = {};
      const toGo = randomBytes(4 << 20);
      harness = await startServer(
        tagged({
          B: async (stream, _session, socket) => {
            // Not reading: the Go writer must stop at our 256 KiB window.
            await sleep(500);
            observed.bufferedWhilePaused = stream.readableLength;
            const hash = createHash("sha256");
            await readN(stream, 4 << 20, (chunk) => hash.update(chunk));
            observed.receivedSha = hash.digest("hex");

            // Go sleeps before reading: our writes must stop at its window, not pile up in the socket.
            const before = socket.bytesWritten;
            let sawBackPressure = false;
            const writing = (async () => {
              for (let off = 0; off < toGo.length; off += 64 * 1024) {
                if (!stream.write(toGo.subarray(off, off + 64 * 1024))) {
                  sawBackPressure = true;
                  await new Promise((r) => stream.once("drain", r));
                }
              }
              stream.end();
            })();
            await sleep(300);
            observed.bytesOnWireWhileGoSleeps = socket.bytesWritten - before;
            observed.writableLengthWhileGoSleeps = stream.writableLength;
            await writing;
            observed.sawBackPressure = sawBackPressure;
            stream.resume();
          },
        }),
      );
      const result = await runGo("bulk", harness.port);
      expect(observed.bufferedWhilePaused).toBeLessThanOrEqual(STREAM_WINDOW);
      expect(observed.bufferedWhilePaused).toBeGreaterThanOrEqual(STREAM_WINDOW - 1);
      expect(observed.receivedSha).toBe(result.sentSha);
      expect(result.received).toBe(4 << 20);
      expect(result.receivedSha).toBe(createHash("sha256").update(toGo).digest("hex"));
      expect(observed.sawBackPressure).toBe(true);
      expect(observed.bytesOnWireWhileGoSleeps).toBeLessThanOrEqual(STREAM_WINDOW + 1024);
      expect(observed.writableLengthWhileGoSleeps).toBeLessThanOrEqual(128 * 1024);
    }, 60_000);

    it("half-closes in both directions", async () => {
      const observed: Record<string, string> = {};
      let gStream: Duplex | undefined;
      harness = await startServer(
        tagged({
          H: async (stream) => {
            stream.end("server-data");
            observed.H = (await collect(stream)).toString();
          },
          G: async (stream) => {
            gStream = stream;
            observed.G = (await collect(stream)).toString();
            // Still writable after the client's FIN; ending completes the close on both sides.
            stream.end("late");
          },
        }),
      );
      const result = await runGo("halfclose", harness.port);
      expect(result.fromServer).toBe("server-data");
      expect(observed).toEqual({ H: "client-after-fin", G: "client-data" });
      await until(() => gStream?.destroyed === true, "G stream to auto-destroy");
      expect(gStream?.errored).toBeNull();
    }, 60_000);

    it("sends RST on destroy() and reports the client's RST as a stream error", async () => {
      const observed: Record<string, unknown> = {};
      harness = await startServer(
        tagged({
          R: (stream) => {
            stream.destroy();
          },
          S: (stream) => {
            stream.on("end", () => {
              observed.sEnded = true;
            });
            stream.on("error", (err: NodeJS.ErrnoException) => {
              observed.sError = err.code;
            });
            stream.resume(); // read to the FIN, but never end our side
          },
        }),
      );
      const result = await runGo("reset", harness.port);
      expect(result.readErr).toBe("connection reset");
      expect(observed).toEqual({ sEnded: true, sError: "ERR_YAMUX_STREAM_RESET" });
      await until(() => harness!.sessions[0]!.session.streamCount === 0, "streams to be released");
    }, 60_000);

    it("opens streams towards the Go client (even ids), acknowledged by its Accept", async () => {
      const replies: Array<Promise<{ id: number; reply: string }>> = [];
      harness = await startServer(tagged({}), {}, (session) => {
        for (let i = 0; i < 10; i++) {
          replies.push(
            session.open().then(async (stream) => {
              stream.end(`hello-${i}`);
              return { id: (stream as YamuxStream).id, reply: (await collect(stream)).toString() };
            }),
          );
        }
      });
      const result = await runGo("serveropen", harness.port);
      const got = await Promise.all(replies);
      expect(got.map((r) => r.reply)).toEqual(Array.from({ length: 10 }, (_, i) => `HELLO-${i}`));
      expect(got.every((r) => r.id % 2 === 0)).toBe(true);
      expect([...(result.acceptedIds as number[])].sort((a, b) => a - b)).toEqual(
        got.map((r) => r.id).sort((a, b) => a - b),
      );
    }, 60_000);

    it("rejects open() when the client resets the SYN (backlog full) or never acknowledges it", async () => {
      harness = await startServer(
        tagged({
          T: async (stream, session) => {
            const outcomes = await Promise.all([session.open(), session.open(), session.open()].map(settle));
            stream.end(JSON.stringify(outcomes.map((o) => (o.ok ? "opened" : o.error.message))));
            stream.resume();
          },
        }),
        { streamOpenTimeoutMs: 800 },
      );
      const result = await runGo("backlog", harness.port);
      const verdict = JSON.parse(result.verdict as string) as string[];
      expect(verdict.filter((v) => v.includes("timed out"))).toHaveLength(2);
      expect(verdict.filter((v) => v.includes("refused by remote"))).toHaveLength(1);
    }, 60_000);

    it("answers the client's keep-alive pings and keeps its own pings answered", async () => {
      const seen = { goPings: 0, pongsToUs: 0 };
      const decoder = new FrameDecoder(STREAM_WINDOW);
      harness = await startServer(
        tagged({}),
        { keepAliveIntervalMs: 100, connectionWriteTimeoutMs: 1000 },
        undefined,
        (chunk) => {
          decoder.append(chunk);
          for (let f = decoder.next(); f !== undefined; f = decoder.next()) {
            if (f.header.type !== FrameType.Ping) continue;
            if (f.header.flags & Flag.SYN) seen.goPings++;
            if (f.header.flags & Flag.ACK) seen.pongsToUs++;
          }
        },
      );
      const result = await runGo("keepalive", harness.port);
      expect(result.pings as number).toBeGreaterThan(5);
      expect(seen.goPings).toBeGreaterThan(10); // the client's explicit pings plus its 100 ms keep-alive
      expect(seen.pongsToUs).toBeGreaterThan(5); // our 100 ms keep-alive, answered
    }, 60_000);

    it("refuses to open streams after the client's GoAway", async () => {
      harness = await startServer(
        tagged({
          W: async (stream, session) => {
            const outcome = await settle(session.open());
            stream.end(outcome.ok ? "opened" : outcome.error.message);
            stream.resume();
          },
        }),
      );
      const result = await runGo("goaway", harness.port);
      expect(result.verdict).toMatch(/GoAway/);
    }, 60_000);

    it("sends GoAway and closes the connection on close()", async () => {
      const observed: Record<string, unknown> = {};
      harness = await startServer(
        tagged({
          C: (stream, session) => {
            stream.on("error", (err: NodeJS.ErrnoException) => {
              observed.streamError = err.code;
            });
            session.close();
            observed.closed = session.closed;
            void session.done.then(() => {
              observed.done = true;
            });
          },
        }),
      );
      const result = await runGo("close", harness.port);
      expect(result.goAwayCode).toBe(0);
      expect(observed).toEqual({ closed: true, done: true, streamError: "ERR_YAMUX_SESSION_CLOSED" });
    }, 60_000);

    it("errors and closes every stream when the client vanishes", async () => {
      const streams: Duplex[] = [];
      const errors: string[] = [];
      let opened = false;
      const track = (stream: Duplex) => {
        streams.push(stream);
        stream.on("error", (err: NodeJS.ErrnoException) => errors.push(err.code ?? err.message));
      };
      harness = await startServer((stream, session) => {
        track(stream);
        if (opened) return;
        opened = true;
        for (let i = 0; i < 2; i++) void session.open().then(track);
      });
      await runGo("vanish", harness.port);
      const { session } = harness.sessions[0]!;
      await Promise.race([
        session.done,
        sleep(5000).then(() => Promise.reject(new Error("session not done"))),
      ]);
      expect(session.closed).toBe(true);
      expect(session.streamCount).toBe(0);
      await until(() => streams.length === 7 && streams.every((s) => s.destroyed), "all streams destroyed");
      expect(errors).toEqual(Array(7).fill("ERR_YAMUX_SESSION_CLOSED"));
    }, 60_000);
  },
);

// ---------------------------------------------------------------- without Go

describe("yamux frame decoder", () => {
  it("decodes frames however the input is split", () => {
    const payload = randomBytes(5000);
    const wire = Buffer.concat([
      encodeHeader(FrameType.WindowUpdate, Flag.SYN, 1, 0),
      encodeHeader(FrameType.Data, 0, 1, payload.length),
      payload,
      encodeHeader(FrameType.Ping, Flag.SYN, 0, 77),
      encodeHeader(FrameType.Data, Flag.FIN, 1, 0),
      encodeHeader(FrameType.GoAway, 0, 0, 0),
    ]);
    for (const maxPiece of [1, 3, 11, 12, 13, 4096, wire.length]) {
      const decoder = new FrameDecoder(STREAM_WINDOW);
      const frames: Array<{ header: FrameHeader; data: Buffer }> = [];
      for (let off = 0; off < wire.length; ) {
        const n = 1 + Math.floor(Math.random() * maxPiece);
        decoder.append(wire.subarray(off, off + n));
        off += n;
        for (let f = decoder.next(); f !== undefined; f = decoder.next()) {
          frames.push({ header: f.header, data: Buffer.concat(f.payload) });
        }
      }
      expect(frames.map((f) => [f.header.type, f.header.flags, f.header.streamId, f.header.length])).toEqual([
        [FrameType.WindowUpdate, Flag.SYN, 1, 0],
        [FrameType.Data, 0, 1, 5000],
        [FrameType.Ping, Flag.SYN, 0, 77],
        [FrameType.Data, Flag.FIN, 1, 0],
        [FrameType.GoAway, 0, 0, 0],
      ]);
      expect(frames[1]!.data.equals(payload)).toBe(true);
    }
  });

  it("rejects a data frame larger than any window before buffering it", () => {
    const decoder = new FrameDecoder(STREAM_WINDOW);
    decoder.append(encodeHeader(FrameType.Data, 0, 1, STREAM_WINDOW + 1));
    expect(() => decoder.next()).toThrow(/exceeds/);
  });
});

describe("yamux session with a raw peer", () => {
  async function rawPeer(options: Partial<YamuxOptions>) {
    let session: YamuxSession | undefined;
    const server = createServer((socket) => {
      session = YamuxSession.server(socket, {
        onStream: (stream) => stream.on("error", () => {}),
        ...options,
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    const peer = new Socket();
    const received: FrameHeader[] = [];
    const decoder = new FrameDecoder(STREAM_WINDOW);
    peer.on("data", (chunk: Buffer) => {
      decoder.append(chunk);
      for (let f = decoder.next(); f !== undefined; f = decoder.next()) received.push(f.header);
    });
    peer.on("error", () => {});
    await new Promise<void>((r) => peer.connect(address.port, "127.0.0.1", r));
    await until(() => session !== undefined, "session");
    return { session: session!, peer, received, close: () => new Promise((r) => server.close(r)) };
  }

  it("closes the session when its ping goes unanswered", async () => {
    const { session, received, close } = await rawPeer({
      keepAliveIntervalMs: 50,
      connectionWriteTimeoutMs: 100,
    });
    await Promise.race([session.done, sleep(2000).then(() => Promise.reject(new Error("still open")))]);
    expect(received.some((h) => h.type === FrameType.Ping && h.flags === Flag.SYN)).toBe(true);
    await close();
  });

  it("answers a protocol violation with GoAway(protocol error)", async () => {
    const { session, peer, received, close } = await rawPeer({});
    peer.write(encodeHeader(FrameType.WindowUpdate, Flag.SYN, 1, 0));
    await until(() => received.some((h) => h.flags === Flag.ACK && h.streamId === 1), "ACK");
    // 256 KiB + 1 byte in two frames: the second exceeds what is left of the window.
    peer.write(
      Buffer.concat([encodeHeader(FrameType.Data, 0, 1, STREAM_WINDOW), Buffer.alloc(STREAM_WINDOW)]),
    );
    peer.write(Buffer.concat([encodeHeader(FrameType.Data, 0, 1, 1), Buffer.alloc(1)]));
    await session.done;
    await until(() => received.some((h) => h.type === FrameType.GoAway), "GoAway");
    expect(received.find((h) => h.type === FrameType.GoAway)?.length).toBe(1);
    await close();
  });

  it("runs a client session against a server session", async () => {
    const server = createServer((socket) => {
      YamuxSession.server(socket, {
        onStream: (stream) => {
          stream.on("error", () => {});
          void collect(stream).then((body) => stream.end(body.toString().toUpperCase()));
        },
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    const socket = new Socket();
    await new Promise<void>((r) => socket.connect(address.port, "127.0.0.1", r));
    const client = YamuxSession.client(socket, { onStream: () => {} });
    const stream = await client.open();
    expect((stream as YamuxStream).id).toBe(1);
    stream.end("abc");
    expect((await collect(stream)).toString()).toBe("ABC");
    await until(() => client.streamCount === 0, "stream release");
    client.close();
    await client.done;
    await new Promise((r) => server.close(r));
  });
});
