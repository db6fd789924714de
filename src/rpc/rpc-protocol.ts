/**
 * The first byte of a connection to Nomad's RPC port names its protocol
 * (helper/pool/conn.go RPCType), and so does the first byte of every stream
 * a client opens inside a multiplexed session.
 */
export const RPC_TYPE = {
  /** Go's net/rpc with msgpack, straight on the connection. */
  nomad: 0x01,
  /** Raft between servers: chronomad's servers replicate through the log instead. */
  raft: 0x02,
  /** yamux, every stream a net/rpc connection (Nomad before 0.8). */
  multiplex: 0x03,
  tls: 0x04,
  /** A streaming RPC (logs, exec): a method header, an ack, then frames. */
  streaming: 0x05,
  /** yamux, every stream starting with its own type byte: what Nomad 0.8+ clients speak. */
  multiplexV2: 0x06,
} as const;

export type RpcType = (typeof RPC_TYPE)[keyof typeof RPC_TYPE];
