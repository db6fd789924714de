/**
 * Wire format of hashicorp/yamux v0.1.1 (the version Nomad 1.6.1 pins): a 12-byte
 * big-endian header (version, type, flags, stream id, length) followed, for Data
 * frames only, by `length` payload bytes. For WindowUpdate the length is a window
 * delta, for Ping an opaque id echoed back, for GoAway a reason code.
 */

export const PROTO_VERSION = 0;
export const HEADER_SIZE = 12;

export const FrameType = {
  Data: 0,
  WindowUpdate: 1,
  Ping: 2,
  GoAway: 3,
} as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

export const Flag = {
  SYN: 1,
  ACK: 2,
  FIN: 4,
  RST: 8,
} as const;

export const GoAwayCode = {
  Normal: 0,
  ProtocolError: 1,
  InternalError: 2,
} as const;

/** Both the initial and (as in hashicorp's default MaxStreamWindowSize) the maximum per-stream window. */
export const STREAM_WINDOW = 256 * 1024;

export interface FrameHeader {
  type: number;
  flags: number;
  streamId: number;
  length: number;
}

export function encodeHeader(type: FrameType, flags: number, streamId: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(HEADER_SIZE);
  buf[0] = PROTO_VERSION;
  buf[1] = type;
  buf.writeUInt16BE(flags, 2);
  buf.writeUInt32BE(streamId, 4);
  buf.writeUInt32BE(length, 8);
  return buf;
}

export class YamuxProtocolError extends Error {
  override readonly name = "YamuxProtocolError";
}

/**
 * Reassembles frames from arbitrarily split input. Data payloads are handed over as
 * the slices they arrived in (no copy); a payload larger than any legal window is
 * rejected from its header alone so a hostile peer cannot make us buffer it.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private header: FrameHeader | undefined;

  constructor(private readonly maxDataLength: number) {}

  append(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    this.chunks.push(buf);
    this.buffered += buf.length;
  }

  /** The next complete frame, or undefined until more input arrives. Throws YamuxProtocolError. */
  next(): { header: FrameHeader; payload: Buffer[] } | undefined {
    if (this.header === undefined) {
      if (this.buffered < HEADER_SIZE) return undefined;
      const raw = this.take(HEADER_SIZE);
      const head = raw.length === 1 ? raw[0]! : Buffer.concat(raw, HEADER_SIZE);
      if (head[0] !== PROTO_VERSION) throw new YamuxProtocolError(`invalid protocol version ${head[0]}`);
      const type = head[1]!;
      if (type > FrameType.GoAway) throw new YamuxProtocolError(`invalid message type ${type}`);
      const header: FrameHeader = {
        type,
        flags: head.readUInt16BE(2),
        streamId: head.readUInt32BE(4),
        length: head.readUInt32BE(8),
      };
      if (type === FrameType.Data && header.length > this.maxDataLength) {
        throw new YamuxProtocolError(`data frame of ${header.length} bytes exceeds any receive window`);
      }
      this.header = header;
    }
    const header = this.header;
    const payloadLength = header.type === FrameType.Data ? header.length : 0;
    if (this.buffered < payloadLength) return undefined;
    this.header = undefined;
    return { header, payload: payloadLength === 0 ? [] : this.take(payloadLength) };
  }

  private take(n: number): Buffer[] {
    const out: Buffer[] = [];
    let left = n;
    while (left > 0) {
      const first = this.chunks[0]!;
      if (first.length <= left) {
        out.push(first);
        this.chunks.shift();
        left -= first.length;
      } else {
        out.push(first.subarray(0, left));
        this.chunks[0] = first.subarray(left);
        left = 0;
      }
    }
    this.buffered -= n;
    return out;
  }
}
