import { randomUUID } from "node:crypto";
import { connect } from "node:net";
import type { Duplex } from "node:stream";
import { encodeGo } from "../../src/rpc/go-msgpack.ts";
import { GoValueReader } from "../../src/rpc/go-value-reader.ts";
import { RpcClient, serveRpcStream } from "../../src/rpc/msgpack-rpc.ts";
import { RPC_TYPE } from "../../src/rpc/rpc-protocol.ts";
import { YamuxSession } from "../../src/rpc/yamux/session.ts";

/** A streaming method as the fake agent serves it: the decoded arguments, then frames written with `send`. */
export type StreamingHandler = (args: Record<string, unknown>, peer: StreamingPeer) => Promise<void> | void;

/** The agent's side of one streaming RPC. */
export interface StreamingPeer {
  readonly stream: Duplex;
  /** Reads the next msgpack value the server sends (exec input); undefined once the server ended its side. */
  next(): Promise<unknown>;
  /** One StreamErrWrapper with output; resolves once the stream took it (back-pressure). */
  send(payload: Uint8Array | string): Promise<void>;
  /** One StreamErrWrapper with an error, as the agent's handleStreamResultError writes it. */
  fail(message: string, code?: number): void;
  /** Closes the stream (FIN), as the agent's handler does when it returns. */
  end(): void;
}

export interface FakeClientOptions {
  readonly rpc?: Readonly<Record<string, (args: Record<string, unknown>) => unknown>>;
  readonly streaming?: Readonly<Record<string, StreamingHandler>>;
}

/**
 * A Nomad client agent as the server sees it on the wire: a TCP connection
 * to the RPC port, byte 0x06, a yamux session (client side); Node.Register
 * over a net/rpc stream of it (so the server records the session); then it
 * serves the streams the server opens: 0x01 net/rpc calls and 0x05
 * streaming RPCs (header, ack, arguments, StreamErrWrapper frames), with
 * the handlers given. Every call it receives is kept in `calls`.
 */
export class FakeClientPeer {
  readonly id = randomUUID();
  readonly secret = randomUUID();
  readonly calls: { method: string; args: Record<string, unknown> }[] = [];
  private session: YamuxSession | undefined;

  constructor(private readonly options: FakeClientOptions) {}

  /** Connects to `rpcAddress`, registers the node with `attributes` (nomad.version 1.6.1 by default) and reports it ready. */
  async connect(rpcAddress: string, attributes: Record<string, string> = {}): Promise<void> {
    const [host, port] = splitAddress(rpcAddress);
    const socket = connect({ host, port });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    socket.write(Buffer.from([RPC_TYPE.multiplexV2]));
    this.attach(socket);
    await this.call("Node.Register", {
      Node: {
        ID: this.id,
        SecretID: this.secret,
        Datacenter: "dc1",
        Name: `fake-${this.id.slice(0, 8)}`,
        HTTPAddr: "127.0.0.1:4646",
        Attributes: { "kernel.name": "linux", "nomad.version": "1.6.1", ...attributes },
        NodeResources: { Cpu: { CpuShares: 4000 }, Memory: { MemoryMB: 8192 } },
        NodeClass: "",
        Status: "initializing",
      },
      Region: "global",
      AuthToken: this.secret,
    });
    // Ready, as an agent reports once its first heartbeat goes out: allocations may be placed on it.
    await this.call("Node.UpdateStatus", {
      NodeID: this.id,
      Status: "ready",
      Region: "global",
      AuthToken: this.secret,
    });
  }

  /** Runs the agent's side of a yamux session on `socket` (already past the 0x06 byte). */
  attach(socket: Duplex): void {
    this.session = YamuxSession.client(socket, { onStream: (stream) => this.serve(stream) });
  }

  /** One client → server call, as the agent makes them. */
  async call(method: string, args: unknown): Promise<unknown> {
    if (!this.session) throw new Error("not connected");
    const stream = await this.session.open();
    stream.write(Buffer.from([RPC_TYPE.nomad]));
    const client = new RpcClient(stream);
    try {
      return await client.call(method, args);
    } finally {
      client.close();
    }
  }

  close(): void {
    this.session?.close();
  }

  private serve(stream: Duplex): void {
    stream.on("error", () => {});
    firstByte(stream, (byte) => {
      if (byte === RPC_TYPE.nomad) {
        serveRpcStream(stream, async ({ method, body }) => {
          const args = (body ?? {}) as Record<string, unknown>;
          this.calls.push({ method, args });
          const handler = this.options.rpc?.[method];
          if (!handler) throw new Error(`rpc: can't find method ${method}`);
          return handler(args);
        });
      } else if (byte === RPC_TYPE.streaming) {
        // A handler cut off by the session closing has nothing left to answer.
        void this.serveStreaming(stream).catch(() => stream.destroy());
      } else {
        stream.destroy();
      }
    });
  }

  private async serveStreaming(stream: Duplex): Promise<void> {
    const reader = new GoValueReader(stream);
    const header = (await reader.next()) as { Method?: string } | undefined;
    const method = header?.Method ?? "";
    const handler = this.options.streaming?.[method];
    if (!handler) {
      stream.end(encodeGo({ Error: `Unknown rpc method: ${JSON.stringify(method)}` }));
      return;
    }
    stream.write(encodeGo({ Error: "" }));
    const args = ((await reader.next()) ?? {}) as Record<string, unknown>;
    this.calls.push({ method, args });
    const peer: StreamingPeer = {
      stream,
      next: () => reader.next(),
      send: (payload) =>
        new Promise<void>((resolve, reject) => {
          const bytes = typeof payload === "string" ? Buffer.from(payload) : payload;
          stream.write(encodeGo({ Error: null, Payload: bytes }), (err) => (err ? reject(err) : resolve()));
        }),
      fail: (message, code) => {
        stream.write(encodeGo({ Error: { Message: message, Code: code ?? null }, Payload: null }));
      },
      end: () => stream.end(),
    };
    await handler(args, peer);
  }
}

function splitAddress(address: string): [string, number] {
  const i = address.lastIndexOf(":");
  return [address.slice(0, i).replace(/^\[|\]$/g, ""), Number(address.slice(i + 1))];
}

function firstByte(stream: Duplex, then: (byte: number | undefined) => void): void {
  const onReadable = () => {
    const chunk = stream.read(1) as Buffer | null;
    if (chunk === null) return;
    stream.off("readable", onReadable);
    stream.off("end", onEnd);
    then(chunk[0]);
  };
  const onEnd = () => {
    stream.off("readable", onReadable);
    then(undefined);
  };
  stream.on("readable", onReadable);
  stream.once("end", onEnd);
}
