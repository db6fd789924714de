import type { Duplex } from "node:stream";

/** One cstructs.StreamErrWrapper: a chunk of output, or the error that ends the stream. */
export interface StreamFrame {
  readonly payload: Buffer;
  readonly error?: { readonly message: string; readonly code: number | undefined };
}

/**
 * A decoded StreamErrWrapper. Payload is Go's []byte: raw bytes from the
 * codec, or base64 text where the codec renders bytes as JSON does.
 */
export function streamFrameOf(value: unknown): StreamFrame {
  const v = isObject(value) ? value : {};
  const error = isObject(v.Error) ? v.Error : undefined;
  return {
    payload: bytesOf(v.Payload),
    ...(error
      ? {
          error: {
            message: typeof error.Message === "string" ? error.Message : "",
            code: typeof error.Code === "number" ? error.Code : undefined,
          },
        }
      : {}),
  };
}

/**
 * Nomad's HTTP layer ignores an error ending a stream when its text says
 * the connection closed ("EOF", "closed"): that is how streams normally end.
 */
export function isClosedError(message: string): boolean {
  return message.includes("EOF") || message.includes("closed");
}

/**
 * Ends a stream to a client agent as Nomad does (Close: FIN). What the
 * agent still sends before it notices is read and dropped, and a stream
 * the agent does not close in turn is reset after a grace period.
 */
export function finishStream(stream: Duplex, graceMs = 5_000): void {
  if (stream.destroyed) return;
  stream.end();
  if (stream.readableEnded) return;
  stream.resume();
  const timer = setTimeout(() => stream.destroy(), graceMs);
  timer.unref();
  stream.once("close", () => clearTimeout(timer));
}

function bytesOf(v: unknown): Buffer {
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (typeof v === "string") return Buffer.from(v, "base64");
  return Buffer.alloc(0);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !(v instanceof Uint8Array);
}
