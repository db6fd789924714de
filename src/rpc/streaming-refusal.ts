import type { Duplex } from "node:stream";
import { encodeGo, GoMsgpackReader, NEED_MORE } from "./go-msgpack.ts";
import type { RpcMetrics } from "./rpc-metrics.ts";

/**
 * A streaming RPC opened towards this server (first byte 0x05): Nomad's
 * servers take these from other servers forwarding a client's logs or exec;
 * chronomad's servers reach client agents themselves, so none is served.
 * The caller gets Nomad's ack for an unknown method instead of a silent close.
 */
export function refuseStreamingRpc(stream: Duplex, metrics: RpcMetrics): void {
  const reader = new GoMsgpackReader();
  const onData = (chunk: Buffer) => {
    reader.push(chunk);
    const header = reader.next();
    if (header === NEED_MORE) return;
    stream.off("data", onData);
    const method = isObject(header) && typeof header.Method === "string" ? header.Method : "";
    metrics.streaming(method, false);
    stream.end(encodeGo({ Error: `Unknown rpc method: ${JSON.stringify(method)}` }));
  };
  stream.on("data", onData);
  stream.on("error", () => stream.destroy());
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}
