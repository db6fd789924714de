import type { LoadCall } from "./http-load-worker.ts";

/** A simulated node as the RPC benchmarks call for it: its ID and secret. */
export interface CallingNode {
  readonly id: string;
  readonly secret: string;
}

/** Node.Register of a ready-to-be node in dc1, as a benchmark's load call. */
export const registerCall = (n: CallingNode): LoadCall => ({
  path: "/v1/rpc/Node.Register",
  token: n.secret,
  body: JSON.stringify({
    Node: {
      ID: n.id,
      SecretID: n.secret,
      Datacenter: "dc1",
      Name: `bench-${n.id.slice(0, 8)}`,
      HTTPAddr: "10.0.0.1:4646",
      Attributes: { "kernel.name": "linux", "nomad.version": "1.6.1" },
      Status: "initializing",
    },
  }),
});

/** Node.UpdateStatus: a heartbeat that keeps the node ready. */
export const heartbeatCall = (n: CallingNode): LoadCall => ({
  path: "/v1/rpc/Node.UpdateStatus",
  token: n.secret,
  body: JSON.stringify({ NodeID: n.id, Status: "ready" }),
});
