import { type Duplex, Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { nodeStreamingRpc, sessionOrForward } from "../rpc/client-calls.ts";
import { encodeGo } from "../rpc/go-msgpack.ts";
import { GoValueReader } from "../rpc/go-value-reader.ts";
import { finishStream, isClosedError, streamFrameOf } from "../rpc/stream-frames.ts";
import { ApiError } from "./api-error.ts";
import { queryOptions, StreamFailure, statusOf } from "./client-call-checks.ts";
import { SNIFF_LENGTH, sniffContentType } from "./content-sniff.ts";
import type { ApiContext } from "./context.ts";

/** What Nomad's noxssrw writer adds to file contents it serves, once it writes any. */
const UNTRUSTED_HEADERS = {
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox",
  "x-content-type-options": "nosniff",
  "x-xss-protection": "1; mode=block",
};

export interface StreamResponseOptions {
  /** The Content-Type the route sets before streaming (logs: text/plain or application/json). */
  readonly contentType?: string;
  /** File contents (cat, readat): sniffed Content-Type and the noxssrw headers, as Nomad serves them. */
  readonly untrusted?: boolean;
}

/**
 * A streaming call to a client agent, as Nomad's server passes one on:
 * `target` makes the server's checks (a StreamFailure carries the status
 * Nomad gives each) and names the node; then the session that node opened
 * (or the peer server holding it answers), the call, and its frames as the
 * response body (streamToReply).
 */
export async function streamFromNode(
  ctx: Pick<ApiContext, "nodeSessions" | "leadership" | "config">,
  request: FastifyRequest,
  reply: FastifyReply,
  call: { target: () => string; method: string; args: Record<string, unknown> },
  options: StreamResponseOptions,
): Promise<FastifyReply> {
  try {
    const session = await sessionOrForward(ctx, request, reply, call.target());
    if (!session) return reply;
    const rpc = await nodeStreamingRpc(session, call.method).catch((err: Error) => {
      throw new StreamFailure(err.message, undefined);
    });
    return await streamToReply(reply, rpc, { ...call.args, ...queryOptions(request) }, options);
  } catch (err) {
    if (err instanceof StreamFailure) throw new ApiError(statusOf(err.code), err.message);
    throw err;
  }
}

/**
 * Nomad's fsStreamImpl over a streaming RPC to a client agent: sends the
 * arguments, then copies each frame's payload to the HTTP response as it
 * comes, pulling the next frame only when the response has taken the last
 * (nothing is buffered but one frame). The status is decided by what comes
 * first: an error frame is the answer's status and text; output is a 200.
 * An error after output is appended to the body, as Nomad's late error
 * write does; errors that say the connection closed end the body quietly.
 *
 * File contents (untrusted) follow Nomad's noxssrw writer: up to 512 bytes
 * are held to pick the Content-Type, and an error with nothing written yet
 * still answers 200, its text as the body (Nomad commits the 200 first).
 */
export async function streamToReply(
  reply: FastifyReply,
  stream: Duplex,
  args: unknown,
  options: StreamResponseOptions = {},
): Promise<FastifyReply> {
  const reader = new GoValueReader(stream);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    finishStream(stream);
  };
  reply.raw.once("close", close);
  const holdUntil = options.untrusted ? SNIFF_LENGTH : 1;
  const held: Buffer[] = [];
  let heldBytes = 0;
  let tail: Buffer | undefined;
  let ended = false;
  try {
    stream.write(encodeGo(args));
    while (heldBytes < holdUntil) {
      const value = await reader.next();
      if (value === undefined) {
        ended = true;
        break;
      }
      const frame = streamFrameOf(value);
      if (frame.error) {
        ended = true;
        if (isClosedError(frame.error.message)) break;
        if (heldBytes === 0 && !options.untrusted)
          throw new ApiError(statusOf(frame.error.code), frame.error.message);
        tail = Buffer.from(frame.error.message);
        break;
      }
      if (frame.payload.length === 0) continue;
      held.push(frame.payload);
      heldBytes += frame.payload.length;
    }
  } catch (err) {
    close();
    if (err instanceof ApiError) throw err;
    const message = (err as Error).message;
    if (!isClosedError(message) && heldBytes === 0 && !options.untrusted) throw new ApiError(500, message);
    if (!isClosedError(message)) tail = Buffer.from(message);
    ended = true;
  }

  const head = Buffer.concat(held);
  if (options.untrusted && heldBytes > 0) reply.headers(UNTRUSTED_HEADERS);
  // Go's ResponseWriter sniffs the first write when no type was set; noxssrw sniffs even nothing.
  if (options.contentType) reply.type(options.contentType);
  else if (options.untrusted || heldBytes > 0) reply.type(sniffContentType(head));
  if (ended) {
    close();
    const body = tail ? Buffer.concat([head, tail]) : head;
    return body.length > 0 ? reply.send(body) : reply.send();
  }
  return reply.send(new FramePump(reader, head, close));
}

/** The rest of the frames as a Readable: one frame is read from the agent per read the response makes. */
class FramePump extends Readable {
  private pumping = false;

  constructor(
    private readonly reader: GoValueReader,
    head: Buffer,
    private readonly close: () => void,
  ) {
    super();
    this.push(head);
  }

  override _read(): void {
    if (!this.pumping) void this.pump();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.close();
    callback(err);
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      for (;;) {
        const value = await this.reader.next();
        if (this.destroyed) return;
        if (value === undefined) return this.finish();
        const frame = streamFrameOf(value);
        if (frame.error) {
          return this.finish(isClosedError(frame.error.message) ? undefined : frame.error.message);
        }
        if (frame.payload.length > 0 && !this.push(frame.payload)) return;
      }
    } catch (err) {
      if (!this.destroyed) {
        const message = (err as Error).message;
        this.finish(isClosedError(message) ? undefined : message);
      }
    } finally {
      this.pumping = false;
    }
  }

  private finish(error?: string): void {
    this.close();
    if (error !== undefined) this.push(Buffer.from(error));
    this.push(null);
  }
}
