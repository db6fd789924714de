import type { Readable } from "node:stream";
import { GoMsgpackReader, NEED_MORE } from "./go-msgpack.ts";

/**
 * Reads msgpack values off a stream one at a time, as Go's codec.Decoder
 * does on a connection: only as many bytes as the next value needs are
 * taken from the stream, so a slow consumer leaves the rest unread and the
 * sender waits (yamux re-opens its window only for what is read).
 */
export class GoValueReader {
  private readonly decoder = new GoMsgpackReader();

  constructor(private readonly stream: Readable) {}

  /**
   * The next value; undefined once the stream ended between values. Rejects
   * if the stream fails, or ends in the middle of a value.
   */
  async next(): Promise<unknown> {
    for (;;) {
      const value = this.decoder.next();
      if (value !== NEED_MORE) return value;
      const chunk = await this.read();
      if (chunk === null) {
        if (this.decoder.buffered > 0) throw new Error("stream ended before a complete msgpack value");
        return undefined;
      }
      this.decoder.push(chunk);
    }
  }

  private read(): Promise<Buffer | null> {
    const stream = this.stream;
    const now = stream.read() as Buffer | null;
    if (now !== null) return Promise.resolve(now);
    if (stream.readableEnded) return Promise.resolve(null);
    if (stream.destroyed) return Promise.reject(stream.errored ?? new Error("stream closed"));
    return new Promise<Buffer | null>((resolve, reject) => {
      const done = () => {
        stream.off("readable", onReadable);
        stream.off("end", onEnd);
        stream.off("error", onError);
        stream.off("close", onClose);
      };
      const onReadable = () => {
        const chunk = stream.read() as Buffer | null;
        if (chunk === null) return;
        done();
        resolve(chunk);
      };
      const onEnd = () => {
        done();
        resolve(null);
      };
      const onError = (err: Error) => {
        done();
        reject(err);
      };
      const onClose = () => {
        done();
        if (stream.readableEnded) resolve(null);
        else reject(stream.errored ?? new Error("stream closed"));
      };
      stream.on("readable", onReadable);
      stream.once("end", onEnd);
      stream.once("error", onError);
      stream.once("close", onClose);
    });
  }
}
