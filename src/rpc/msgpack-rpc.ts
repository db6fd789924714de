import type { Duplex } from "node:stream";
import { encodeGoSequence, GoMsgpackReader, NEED_MORE } from "./go-msgpack.ts";

/*
 * Go's net/rpc over github.com/hashicorp/net-rpc-msgpackrpc, as Nomad uses it
 * in both directions (helper/pool): each message is two msgpack values back
 * to back, a header and a body.
 *
 *   request:  rpc.Request{ServiceMethod, Seq}          then the args
 *   response: rpc.Response{ServiceMethod, Seq, Error}  then the reply, or,
 *             when Error is set, net/rpc's invalidRequest (struct{}{}, an
 *             empty map) which the caller reads and drops.
 *
 * net/rpc's types have no codecgen'd encoders in Nomad, so Go writes their
 * fields sorted by name; the headers below keep that order. Nomad's callers
 * (msgpackrpc.CallWithCodec) send one call at a time per stream, but Go's
 * server reads on while earlier calls run, so replies may come out of order.
 */

export interface RpcRequest {
  readonly method: string;
  readonly seq: number;
  readonly body: unknown;
}

/** An RPC answered with an error: the message is the server's Error string. */
export class RpcRemoteError extends Error {
  override readonly name = "RpcRemoteError";
}

/** net/rpc's ErrShutdown text, for calls cut off by the stream closing. */
const SHUTDOWN_MESSAGE = "connection is shut down";

/** What net/rpc's server sends as the body of an error response. */
const INVALID_REQUEST = {};

/**
 * Serves net/rpc calls arriving on `stream` until it ends: each request is
 * handed to `handle`; its result (or the Error message of a thrown error) is
 * written back with the request's Seq. Calls run concurrently and are
 * answered as they finish, as Go's net/rpc server does. When the peer ends
 * its side, the stream is ended once the calls in flight are answered. Bytes
 * that are not a request end the stream (onError is told).
 */
export function serveRpcStream(
  stream: Duplex,
  handle: (req: RpcRequest) => Promise<unknown>,
  onError?: (err: Error) => void,
): void {
  const reader = new GoMsgpackReader();
  let header: { method: string; seq: number } | undefined;
  let inFlight = 0;
  let peerEnded = false;
  let failed = false;

  const finishIfDone = () => {
    if (peerEnded && inFlight === 0 && !stream.writableEnded && !stream.destroyed) stream.end();
  };

  const reply = (method: string, seq: number, result: unknown, error: string | undefined) => {
    if (stream.destroyed || stream.writableEnded) return;
    let bytes: Buffer;
    try {
      bytes =
        error === undefined
          ? encodeGoSequence([{ Error: "", Seq: seq, ServiceMethod: method }, result])
          : encodeGoSequence([{ Error: error, Seq: seq, ServiceMethod: method }, INVALID_REQUEST]);
    } catch (err) {
      // A reply Go could not have produced either: answer with the reason instead.
      bytes = encodeGoSequence([
        { Error: `rpc: cannot encode reply: ${errorMessage(err)}`, Seq: seq, ServiceMethod: method },
        INVALID_REQUEST,
      ]);
    }
    stream.write(bytes);
  };

  const dispatch = (req: RpcRequest) => {
    inFlight++;
    let settled: Promise<unknown>;
    try {
      settled = Promise.resolve(handle(req));
    } catch (err) {
      settled = Promise.reject(err);
    }
    void settled
      .then(
        (result) => reply(req.method, req.seq, result, undefined),
        (err: unknown) => reply(req.method, req.seq, undefined, errorMessage(err)),
      )
      .catch((err: unknown) => onError?.(err instanceof Error ? err : new Error(String(err))))
      .finally(() => {
        inFlight--;
        finishIfDone();
      });
  };

  const fail = (err: Error) => {
    failed = true;
    stream.off("data", onData);
    onError?.(err);
    stream.destroy();
  };

  const onData = (chunk: Buffer) => {
    if (failed) return;
    reader.push(chunk);
    try {
      for (let value = reader.next(); value !== NEED_MORE; value = reader.next()) {
        if (header === undefined) {
          header = requestHeader(value);
        } else {
          const req: RpcRequest = { method: header.method, seq: header.seq, body: value };
          header = undefined;
          dispatch(req);
        }
      }
    } catch (err) {
      fail(err instanceof Error ? err : new Error(String(err)));
    }
  };

  stream.on("data", onData);
  stream.on("end", () => {
    peerEnded = true;
    finishIfDone();
  });
  stream.on("error", (err: Error) => {
    if (!failed) onError?.(err);
  });
}

function requestHeader(value: unknown): { method: string; seq: number } {
  if (typeof value === "object" && value !== null) {
    const { ServiceMethod, Seq } = value as { ServiceMethod?: unknown; Seq?: unknown };
    if (typeof ServiceMethod === "string" && (Seq === undefined || Seq === null || typeof Seq === "number")) {
      return { method: ServiceMethod, seq: typeof Seq === "number" ? Seq : 0 };
    }
  }
  throw new Error(`rpc: server cannot decode request: not a request header: ${JSON.stringify(value)}`);
}

function errorMessage(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  // An empty Error means success to Go's client.
  return message === "" ? "rpc: call failed" : message;
}

interface PendingCall {
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: Error) => void;
}

/**
 * A net/rpc client on one stream (a server calling into a client agent over
 * its yamux session): calls may overlap; replies are matched by Seq.
 */
export class RpcClient {
  private readonly reader = new GoMsgpackReader();
  private readonly pending = new Map<number, PendingCall>();
  private nextSeq = 1;
  private header: { seq: number; error: string } | undefined;
  private shutdown: Error | undefined;

  constructor(private readonly stream: Duplex) {
    stream.on("data", (chunk: Buffer) => this.onData(chunk));
    stream.on("end", () => this.failAll(new Error(SHUTDOWN_MESSAGE)));
    stream.on("close", () => this.failAll(new Error(SHUTDOWN_MESSAGE)));
    stream.on("error", (err: Error) => this.failAll(err));
  }

  /** Calls `method`; resolves with the reply body, rejects with RpcRemoteError when the server returns an error. */
  call(method: string, args: unknown): Promise<unknown> {
    if (this.shutdown !== undefined) return Promise.reject(this.shutdown);
    const seq = this.nextSeq++;
    return new Promise((resolve, reject) => {
      let bytes: Buffer;
      try {
        bytes = encodeGoSequence([{ Seq: seq, ServiceMethod: method }, args ?? null]);
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      this.pending.set(seq, { resolve, reject });
      this.stream.write(bytes);
    });
  }

  /** Ends the stream; calls still waiting reject. */
  close(): void {
    this.failAll(new Error(SHUTDOWN_MESSAGE));
    if (!this.stream.destroyed && !this.stream.writableEnded) this.stream.end();
  }

  private onData(chunk: Buffer): void {
    if (this.shutdown !== undefined) return;
    this.reader.push(chunk);
    try {
      for (let value = this.reader.next(); value !== NEED_MORE; value = this.reader.next()) {
        if (this.header === undefined) {
          this.header = responseHeader(value);
          continue;
        }
        const { seq, error } = this.header;
        this.header = undefined;
        const call = this.pending.get(seq);
        // A reply to no call (as net/rpc's client does, its body is dropped).
        if (call === undefined) continue;
        this.pending.delete(seq);
        if (error !== "") call.reject(new RpcRemoteError(error));
        else call.resolve(value);
      }
    } catch (err) {
      this.failAll(err instanceof Error ? err : new Error(String(err)));
      this.stream.destroy();
    }
  }

  private failAll(err: Error): void {
    if (this.shutdown === undefined) this.shutdown = err;
    const calls = [...this.pending.values()];
    this.pending.clear();
    for (const call of calls) call.reject(err);
  }
}

function responseHeader(value: unknown): { seq: number; error: string } {
  if (typeof value === "object" && value !== null) {
    const { Seq, Error: error } = value as { Seq?: unknown; Error?: unknown };
    if (typeof Seq === "number" && (error === undefined || error === null || typeof error === "string")) {
      return { seq: Seq, error: typeof error === "string" ? error : "" };
    }
  }
  throw new Error(`rpc: cannot decode response header: ${JSON.stringify(value)}`);
}
