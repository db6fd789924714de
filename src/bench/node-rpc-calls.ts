import { DEFAULT_SHAPE, nodeBody } from "../nodesim/node-body.ts";
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

/**
 * Node.Register of a node the server has not seen, with the body the load
 * simulator sends (a Nomad client's fingerprint: attributes, resources,
 * drivers, networks); `index` names it and gives it its address.
 */
export const simRegisterCall = (n: CallingNode, index: number): LoadCall => ({
  path: "/v1/rpc/Node.Register",
  token: n.secret,
  body: JSON.stringify({
    Node: nodeBody({ id: n.id, secret: n.secret, name: `sim-${index}`, index }, DEFAULT_SHAPE),
  }),
});

/** Node.UpdateStatus: a heartbeat that keeps the node ready. */
export const heartbeatCall = (n: CallingNode): LoadCall => ({
  path: "/v1/rpc/Node.UpdateStatus",
  token: n.secret,
  body: JSON.stringify({ NodeID: n.id, Status: "ready" }),
});
