import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP proxy in front of one Kafka broker, so a test can make "the broker"
 * unreachable for one server without touching the broker other tests use.
 *
 * Kafka clients connect to the addresses a broker advertises in its
 * Metadata and FindCoordinator answers, not to the bootstrap address they
 * were given; the proxy therefore rewrites, in every answer, the broker's
 * advertised port (after its host, which the proxy shares, so no length
 * changes) to its own. Every connection then goes through it, and `close`
 * cuts them all.
 */
export class KafkaProxy {
  private constructor(
    private readonly server: Server,
    /** host:port to give the server instead of the broker's. */
    readonly address: string,
    private readonly sockets: Set<Socket>,
  ) {}

  static async start(broker: string): Promise<KafkaProxy> {
    const [host, portText] = broker.split(":") as [string, string];
    const upstreamPort = Number(portText);
    const sockets = new Set<Socket>();
    let ownPort = 0;
    const server = createServer((client) => {
      const upstream = connect(upstreamPort, host);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on("close", () => sockets.delete(s));
        s.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.on(
        "data",
        frames(host, upstreamPort, () => ownPort, client),
      );
      upstream.on("end", () => client.end());
    });
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    ownPort = (server.address() as { port: number }).port;
    return new KafkaProxy(server, `${host}:${ownPort}`, sockets);
  }

  /** The broker is gone, as far as anyone behind the proxy can tell. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    await closed;
  }
}

/** Splits the broker's byte stream into size-prefixed answers, rewrites each and forwards it. */
function frames(host: string, from: number, to: () => number, out: Socket): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 4) {
      const size = pending.readInt32BE(0);
      if (pending.length < 4 + size) break;
      const frame = pending.subarray(0, 4 + size);
      rewritePort(frame, host, from, to());
      out.write(frame);
      pending = pending.subarray(4 + size);
    }
  };
}

/**
 * Replaces `from` by `to` wherever it follows `host` as a Kafka string:
 * an int16 length (classic) or an unsigned varint length + 1 (compact).
 */
function rewritePort(frame: Buffer, host: string, from: number, to: number): void {
  const name = Buffer.from(host);
  for (let at = frame.indexOf(name); at >= 0; at = frame.indexOf(name, at + 1)) {
    const classic = at >= 2 && frame.readInt16BE(at - 2) === name.length;
    const compact = at >= 1 && frame[at - 1] === name.length + 1;
    const portAt = at + name.length;
    if ((classic || compact) && portAt + 4 <= frame.length && frame.readInt32BE(portAt) === from) {
      frame.writeInt32BE(to, portAt);
    }
  }
}
